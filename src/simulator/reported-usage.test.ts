/**
 * The `prompt-tokens=` and `output-tokens=` directives: every vendor reports the chosen usage, in whole replies and
 * in streams, through the official SDKs where they exist, so a gateway test can make a vendor count more (or less)
 * than the gateway estimated.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callGemini } from './gemini-test-client.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

const KEY = 'sk-usage';
const TEXT = 'Say hello [[sim words=4 prompt-tokens=123456 output-tokens=789]]';

let simulator: RunningSimulator;

beforeAll(async () => {
  simulator = await startSimulator({ apiKeys: [KEY] });
});
afterAll(() => simulator.close());

describe.each([
  { vendor: 'openai', model: 'gpt-5.4' },
  { vendor: 'deepseek', model: 'deepseek-chat' },
] as const)('$vendor chat completions', ({ vendor, model }) => {
  const client = () => new OpenAI({ baseURL: simulator.baseUrls[vendor], apiKey: KEY, maxRetries: 0 });
  const messages = [{ role: 'user' as const, content: TEXT }];

  it('reports the chosen prompt and completion tokens, whole', async () => {
    const completion = await client().chat.completions.create({ model, messages });
    expect(completion.usage).toMatchObject({ prompt_tokens: 123_456, completion_tokens: 789, total_tokens: 124_245 });
  });

  it('reports them in the stream', async () => {
    const stream = await client().chat.completions.create({
      model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage).toMatchObject({ prompt_tokens: 123_456, completion_tokens: 789 });
  });
});

describe('anthropic messages', () => {
  const client = () => new Anthropic({ baseURL: simulator.baseUrls.anthropic, apiKey: KEY, maxRetries: 0 });
  const body = { model: 'claude-sonnet-4-6', max_tokens: 1_000, messages: [{ role: 'user' as const, content: TEXT }] };

  it('reports the chosen input and output tokens, whole, the cache counts a part of the prompt', async () => {
    const message = await client().messages.create({
      ...body,
      messages: [{ role: 'user', content: `${TEXT} [[sim cache-read=400 cache-write=56]]` }],
    });
    expect(message.usage).toMatchObject({
      input_tokens: 123_000,
      cache_read_input_tokens: 400,
      cache_creation_input_tokens: 56,
      output_tokens: 789,
    });
  });

  it('reports them in the stream', async () => {
    const message = await client().messages.stream(body).finalMessage();
    expect(message.usage).toMatchObject({ input_tokens: 123_456, output_tokens: 789 });
  });
});

describe('gemini generateContent', () => {
  const body = { contents: [{ role: 'user', parts: [{ text: TEXT }] }] };

  it('reports the chosen prompt and candidate tokens, whole', async () => {
    const call = await callGemini(simulator.baseUrls.gemini, 'gemini-2.5-flash', 'generateContent', body, {
      key: KEY,
    });
    expect(call.status, call.raw).toBe(200);
    expect(call.body.usageMetadata).toMatchObject({
      promptTokenCount: 123_456,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 123_456 }],
    });
    const usage = call.body.usageMetadata!;
    expect(Number(usage['candidatesTokenCount']) + Number(usage['thoughtsTokenCount'] ?? 0)).toBe(789);
  });

  it('reports them in the stream', async () => {
    const call = await callGemini(simulator.baseUrls.gemini, 'gemini-2.5-flash', 'streamGenerateContent', body, {
      key: KEY,
    });
    expect(call.status, call.raw).toBe(200);
    const usage = call.chunks.at(-1)!.usageMetadata!;
    expect(usage['promptTokenCount']).toBe(123_456);
    expect(Number(usage['candidatesTokenCount']) + Number(usage['thoughtsTokenCount'] ?? 0)).toBe(789);
  });
});
