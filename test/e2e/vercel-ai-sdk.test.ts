import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key } = await harness.createAccountWithKey());
});

afterAll(async () => {
  await harness?.close();
});

const weather = tool({ description: 'Current weather for a city', inputSchema: z.object({ city: z.string() }) });

function providers() {
  return {
    'openai .chat()': (model: string) => createOpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl }).chat(model),
    anthropic: (model: string) => createAnthropic({ apiKey: key, baseURL: `${harness.gateway.url}/v1` })(model),
  };
}

describe.each(['openai .chat()', 'anthropic'] as const)('Vercel AI SDK via %s', (providerName) => {
  it.each(['beta-5.4', 'alpha-sonnet-5', 'gamma-2.5-pro', 'delta-v4-flash'])('streams text from %s', async (model) => {
    const result = streamText({
      model: providers()[providerName](model),
      prompt: 'Say something about bridges.',
      maxRetries: 0,
    });
    const text = await result.text;
    expect(text.length).toBeGreaterThan(0);
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(await result.finishReason).toBe('stop');
  });

  it.each(['beta-5.4', 'alpha-sonnet-5', 'gamma-2.5-pro', 'delta-v4-flash'])(
    'streams a tool call from %s',
    async (model) => {
      const result = streamText({
        model: providers()[providerName](model),
        prompt: 'Weather in Lisbon? [[sim tool=get_weather]]',
        tools: { get_weather: weather },
        maxRetries: 0,
      });
      const calls = await result.toolCalls;
      expect(calls).toHaveLength(1);
      expect(calls[0]!.toolName).toBe('get_weather');
      expect(calls[0]!.input).toHaveProperty('city');
      expect(await result.finishReason).toBe('tool-calls');
    },
  );
});
