import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let client: OpenAI;
let key: string;
let accountId: string;

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key, accountId } = await harness.createAccountWithKey());
  client = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await harness?.close();
});

const PROMPT = [{ role: 'user' as const, content: 'Tell me about toll gates on old roads.' }];

describe('POST /v1/chat/completions through the official openai SDK (beta family)', () => {
  it('returns a completion with usage, under the public model id', async () => {
    const completion = await client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('beta-5.4');
    expect(completion.id).toMatch(/^chatcmpl-/);
    const choice = completion.choices[0]!;
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content?.length).toBeGreaterThan(0);
    expect(choice.finish_reason).toBe('stop');
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  });

  it('relays the upstream reply unchanged: same text and token counts as calling the vendor directly', async () => {
    const direct = new OpenAI({ apiKey: 'direct', baseURL: harness.simulator!.baseUrls.openai, maxRetries: 0 });
    const upstream = await direct.chat.completions.create({ model: 'gpt-5.4', messages: PROMPT });
    const viaGateway = await client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT });
    expect(viaGateway.choices[0]!.message.content).toBe(upstream.choices[0]!.message.content);
    expect(viaGateway.usage).toMatchObject({
      prompt_tokens: upstream.usage!.prompt_tokens,
      completion_tokens: upstream.usage!.completion_tokens,
      total_tokens: upstream.usage!.total_tokens,
    });
  });

  it('streams: role first, text assembled from deltas equals the non-stream reply, usage chunk last', async () => {
    const whole = await client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT });
    const stream = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: PROMPT,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    const finish = chunks.find((chunk) => chunk.choices[0]?.finish_reason);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      prompt_tokens: whole.usage!.prompt_tokens,
      completion_tokens: whole.usage!.completion_tokens,
      total_tokens: whole.usage!.total_tokens,
    });
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  });

  it('omits the usage chunk when the client did not ask for it, and ends with [DONE]', async () => {
    const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'beta-5.4', messages: PROMPT, stream: true }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await response.text();
    const data = body
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => frame.replace(/^data: /, ''));
    expect(data[data.length - 1]).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((payload) => JSON.parse(payload) as { choices: unknown[]; usage?: unknown });
    expect(chunks.every((chunk) => chunk.choices.length === 1 && chunk.usage === undefined)).toBe(true);
  });

  it("the SDK's stream helper assembles the same completion as the non-stream call", async () => {
    const whole = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: PROMPT,
      max_completion_tokens: 12,
    });
    const runner = client.chat.completions.stream({ model: 'beta-5.4', messages: PROMPT, max_completion_tokens: 12 });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(whole.choices[0]!.message.content);
    expect(final.choices[0]!.finish_reason).toBe(whole.choices[0]!.finish_reason);
    expect(whole.choices[0]!.finish_reason).toBe('length');
    expect(whole.usage!.completion_tokens).toBe(12);
  });

  it('records one usage row per request with the tokens the client was told', async () => {
    const completion = await client.chat.completions.create({
      model: 'beta-5.5',
      messages: [{ role: 'user', content: 'usage row check' }],
    });
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 100);
    const row = rows.find((candidate) => candidate.model === 'beta-5.5');
    expect(row).toMatchObject({
      status: 'ok',
      family: 'beta',
      stream: false,
      inputTokens: completion.usage!.prompt_tokens,
      outputTokens: completion.usage!.completion_tokens,
    });
  });
});
