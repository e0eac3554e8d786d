import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator({ apiKeys: ['sk-test'] });
  client = new OpenAI({ baseURL: simulator.baseUrls.openai, apiKey: 'sk-test', maxRetries: 0 });
});
afterAll(() => simulator.close());

const tokens = (text: string): number => encode(text).length;
const userText = 'Write two lines about a lighthouse keeper and the sea';
const request: ChatCompletionCreateParamsNonStreaming = {
  model: 'gpt-5.5',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: userText },
  ],
};

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('OpenAI simulator: replies', () => {
  it('answers a non-stream completion with usage counted by the o200k tokenizer', async () => {
    const completion = await client.chat.completions.create(request);
    const text = completion.choices[0]?.message.content ?? '';
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('gpt-5.5');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(text.startsWith('You said: "Write two lines about a lighthouse keeper and ...".')).toBe(true);
    // 3 per message + role + content, plus 3 priming the reply (see openai-prompt.ts).
    const promptTokens = 3 + tokens('system') + tokens('You are terse.') + 3 + tokens('user') + tokens(userText) + 3;
    expect(completion.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: tokens(text),
      total_tokens: promptTokens + tokens(text),
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    });
  });

  it('streams the same text, with role first, finish, then the usage chunk last', async () => {
    const completion = await client.chat.completions.create(request);
    const chunks = await collect(
      await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }),
    );
    const first = chunks[0];
    expect(first?.choices[0]?.delta).toEqual({ role: 'assistant', content: '', refusal: null });
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(completion.choices[0]?.message.content);
    expect(chunks.length).toBeGreaterThan(5);
    const usageChunk = chunks.at(-1);
    expect(usageChunk?.choices).toEqual([]);
    expect(usageChunk?.usage).toEqual(completion.usage);
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    for (const chunk of chunks) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect([chunk.id, chunk.created, chunk.model]).toEqual([first?.id, first?.created, 'gpt-5.5']);
      if (chunk !== usageChunk) expect(chunk.usage).toBeNull();
    }
  });

  it('omits usage from chunks without include_usage', async () => {
    const chunks = await collect(await client.chat.completions.create({ ...request, stream: true }));
    expect(chunks.every((chunk) => chunk.choices.length === 1 && !('usage' in chunk))).toBe(true);
  });

  it('is deterministic: same body, same reply and id; another prompt, another reply', async () => {
    const [a, b] = await Promise.all([
      client.chat.completions.create(request),
      client.chat.completions.create(request),
    ]);
    expect(a.choices[0]?.message.content).toBe(b.choices[0]?.message.content);
    expect(a.id).toBe(b.id);
    const other = await client.chat.completions.create({
      ...request,
      messages: [{ role: 'user', content: 'Something else entirely' }],
    });
    expect(other.choices[0]?.message.content).not.toBe(a.choices[0]?.message.content);
  });

  it('truncates at max_completion_tokens (or max_tokens) with finish_reason length', async () => {
    const capped = await client.chat.completions.create({ ...request, max_completion_tokens: 9 });
    expect(capped.choices[0]?.finish_reason).toBe('length');
    expect(capped.usage?.completion_tokens).toBe(9);
    expect(tokens(capped.choices[0]?.message.content ?? '')).toBe(9);
    const legacy = await client.chat.completions.create({ ...request, max_tokens: 9 });
    expect(legacy.choices[0]?.message.content).toBe(capped.choices[0]?.message.content);

    const chunks = await collect(
      await client.chat.completions.create({
        ...request,
        max_completion_tokens: 9,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(
      capped.choices[0]?.message.content,
    );
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('length');
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(9);
  });

  it('honours stop sequences without including them', async () => {
    const full =
      (
        await client.chat.completions.create({
          ...request,
          messages: [{ role: 'user', content: 'the fox [[sim words=30]]' }],
        })
      ).choices[0]?.message.content ?? '';
    const stopped = await client.chat.completions.create({
      ...request,
      messages: [{ role: 'user', content: 'the fox [[sim words=30]]' }],
      stop: ['fox', 'never-present'],
    });
    expect(stopped.choices[0]?.message.content).toBe(full.slice(0, full.indexOf('fox')));
    expect(stopped.choices[0]?.finish_reason).toBe('stop');
    expect(stopped.usage?.completion_tokens).toBe(tokens(full.slice(0, full.indexOf('fox'))));
  });

  it('returns n choices, each streamed under its own index', async () => {
    const completion = await client.chat.completions.create({ ...request, n: 2 });
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1]);
    const texts = completion.choices.map((choice) => choice.message.content ?? '');
    expect(texts[0]).not.toBe(texts[1]);
    expect(completion.usage?.completion_tokens).toBe(tokens(texts[0] ?? '') + tokens(texts[1] ?? ''));
    const chunks = await collect(await client.chat.completions.create({ ...request, n: 2, stream: true }));
    const streamed = ['', ''];
    for (const chunk of chunks)
      for (const choice of chunk.choices) streamed[choice.index] += choice.delta.content ?? '';
    expect(streamed).toEqual(texts);
  });

  it('accepts unknown top-level fields, tool turns in order, and content parts', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-5.4',
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }],
      // @ts-expect-error -- a field the SDK types do not know, which OpenAI accepts
      some_future_field: { enabled: true },
    });
    // The conversation ends with a tool result, so the reply quotes it (openai-tools.test.ts has more).
    expect(completion.choices[0]?.message.content?.startsWith('Tool results: "Sunny".')).toBe(true);
  });
});

describe('OpenAI simulator: HTTP surface', () => {
  it('rejects a missing or unknown key with 401 invalid_api_key', async () => {
    const response = await fetch(`${simulator.baseUrls.openai}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(request),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    const wrongKey = new OpenAI({ baseURL: simulator.baseUrls.openai, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrongKey.chat.completions.create(request)).rejects.toMatchObject({
      status: 401,
      code: 'invalid_api_key',
    });
    await expect(wrongKey.chat.completions.create(request)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('serves the /v1 alias and the model list', async () => {
    const alias = new OpenAI({ baseURL: `${simulator.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const completion = await alias.chat.completions.create(request);
    expect(completion.choices[0]?.message.content).toBe(
      (await client.chat.completions.create(request)).choices[0]?.message.content,
    );
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toContain('gpt-5.5');
    expect((await client.models.retrieve('o3')).id).toBe('o3');
  });

  it('answers unknown paths with vendor-shaped 404s, and gives every vendor its SDK base URL', async () => {
    const unknown = await fetch(`${simulator.url}/openai/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test' },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      error: { message: 'Invalid URL (POST /v1/embeddings)', type: 'invalid_request_error' },
    });
    const anthropic = await fetch(`${simulator.baseUrls.anthropic}/v1/complete`, { method: 'POST' });
    expect(anthropic.status).toBe(404);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const gemini = await fetch(`${simulator.baseUrls.gemini}/v1beta/files`, { method: 'POST' });
    expect(await gemini.json()).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
    const deepseek = await fetch(`${simulator.baseUrls.deepseek}/completions`, { method: 'POST' });
    expect(deepseek.status).toBe(404);
    const nowhere = await fetch(`${simulator.url}/mistral/v1/chat/completions`, { method: 'POST' });
    expect(nowhere.status).toBe(404);
    expect(simulator.baseUrls).toEqual({
      openai: `${simulator.url}/openai/v1`,
      anthropic: `${simulator.url}/anthropic`,
      gemini: `${simulator.url}/gemini`,
      deepseek: `${simulator.url}/deepseek`,
    });
  });
});
