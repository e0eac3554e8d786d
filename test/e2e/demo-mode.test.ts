import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway({ demo: true });
});

afterAll(async () => {
  await harness?.close();
});

describe('demo mode', () => {
  it('with no vendor configured, serves from the in-process simulator', async () => {
    expect(harness.gateway.config.demoMode).toBe(true);
    expect(harness.gateway.simulatorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { key } = await harness.createAccountWithKey();
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'o3',
      messages: [{ role: 'user', content: 'demo?' }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();
  });

  it('caches a repeated long prompt: the second request reads it from the cache', async () => {
    const { key } = await harness.createAccountWithKey();
    const client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const system = Array.from({ length: 200 }, (_, index) => `Rule ${index}: keep answers short and exact.`).join(' ');
    const body = {
      model: 'beta-5.4',
      messages: [
        { role: 'system' as const, content: system },
        { role: 'user' as const, content: 'What do the rules say?' },
      ],
    };
    const first = await client.chat.completions.create(body);
    const second = await client.chat.completions.create(body);
    expect(first.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
    const prompt = second.usage?.prompt_tokens ?? 0;
    expect(prompt).toBe(first.usage?.prompt_tokens);
    // OpenAI's rule: hits from 1,024 tokens in steps of 128, within the prompt less the 3 tokens priming the reply.
    expect(second.usage?.prompt_tokens_details?.cached_tokens).toBe(
      1_024 + Math.floor((prompt - 3 - 1_024) / 128) * 128,
    );
  });
});
