import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator({ apiKeys: ['sk-ds'] });
  client = new OpenAI({ baseURL: simulator.baseUrls.deepseek, apiKey: 'sk-ds', maxRetries: 0 });
});
afterAll(() => simulator.close());

const tokens = (text: string): number => encode(text).length;
const userText = 'Which is larger, 9.11 or 9.8?';
const chat: ChatCompletionCreateParamsNonStreaming = {
  model: 'deepseek-chat',
  messages: [{ role: 'user', content: userText }],
};
const reasoner: ChatCompletionCreateParamsNonStreaming = { ...chat, model: 'deepseek-reasoner' };
const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
  },
];

/** DeepSeek's extension fields, which the OpenAI SDK passes through untyped. */
type WithReasoning = { reasoning_content?: string | null };

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('DeepSeek simulator: replies', () => {
  it('answers with OpenAI fields plus prompt cache hit/miss tokens', async () => {
    const completion = await client.chat.completions.create(chat);
    const text = completion.choices[0]?.message.content ?? '';
    expect(completion.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(text.startsWith('You said: "Which is larger, 9.11 or 9.8?".')).toBe(true);
    const prompt = 3 + tokens('user') + tokens(userText) + 3;
    expect(completion.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: tokens(text),
      total_tokens: prompt + tokens(text),
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: prompt,
    });
    expect(completion.choices[0]?.message).toEqual({ role: 'assistant', content: text });
  });

  it('streams a keep-alive comment first, then the same text, with usage on the finish chunk', async () => {
    const response = await fetch(`${simulator.baseUrls.deepseek}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-ds', 'content-type': 'application/json' },
      body: JSON.stringify({ ...chat, stream: true, stream_options: { include_usage: true } }),
    });
    const raw = await response.text();
    expect(raw.startsWith(': keep-alive\n\n')).toBe(true);
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    const completion = await client.chat.completions.create(chat);
    const chunks = await collect(
      await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } }),
    );
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(
      completion.choices[0]?.message.content,
    );
    const finish = chunks.at(-1);
    expect(finish?.choices[0]?.finish_reason).toBe('stop');
    expect(finish?.usage).toEqual(completion.usage);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === undefined)).toBe(true);
  });

  it('reasons on deepseek-reasoner: reasoning_content beside content, streamed first, counted in reasoning_tokens', async () => {
    const completion = await client.chat.completions.create(reasoner);
    const message = completion.choices[0]?.message as (typeof completion.choices)[0]['message'] & WithReasoning;
    expect(message.reasoning_content?.startsWith('Thinking about "Which is larger, 9.11 or 9.8?".')).toBe(true);
    const reasoningTokens = tokens(message.reasoning_content ?? '');
    expect(completion.usage).toMatchObject({
      completion_tokens: reasoningTokens + tokens(message.content ?? ''),
      completion_tokens_details: { reasoning_tokens: reasoningTokens },
    });
    const chunks = await collect(
      await client.chat.completions.create({ ...reasoner, stream: true, stream_options: { include_usage: true } }),
    );
    const deltas = chunks.map((chunk) => chunk.choices[0]?.delta as { content?: string | null } & WithReasoning);
    const firstContent = deltas.findIndex((delta) => typeof delta.content === 'string' && delta.content.length > 0);
    expect(deltas.slice(0, firstContent).every((delta) => delta.content === null)).toBe(true);
    expect(deltas.map((delta) => delta.reasoning_content ?? '').join('')).toBe(message.reasoning_content);
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe(message.content);
    expect(chunks.at(-1)?.usage).toEqual(completion.usage);
  });

  it('switches thinking mode on deepseek-chat with thinking: {type: "enabled"}', async () => {
    const completion = await client.chat.completions.create({
      ...chat,
      thinking: { type: 'enabled' },
    } as ChatCompletionCreateParamsNonStreaming);
    expect((completion.choices[0]!.message as WithReasoning).reasoning_content).toBeTruthy();
  });

  it('truncates at max_tokens (reasoning included) and honours stop', async () => {
    const capped = await client.chat.completions.create({ ...chat, max_tokens: 6 });
    expect([capped.choices[0]?.finish_reason, capped.usage?.completion_tokens]).toEqual(['length', 6]);
    const thinkingCapped = await client.chat.completions.create({ ...reasoner, max_tokens: 6 });
    expect(thinkingCapped.choices[0]?.message.content).toBe('');
    expect(thinkingCapped.usage?.completion_tokens_details?.reasoning_tokens).toBe(6);
    const stopped = await client.chat.completions.create({ ...chat, stop: ['larger'] });
    expect(stopped.choices[0]?.message.content).toBe('You said: "Which is ');
  });

  it('reports simulated cache hits as prompt_cache_hit_tokens', async () => {
    const completion = await client.chat.completions.create({
      ...chat,
      messages: [{ role: 'user', content: `${userText} [[sim cache-read=8]]` }],
    });
    const usage = completion.usage as unknown as Record<string, number>;
    expect(usage['prompt_cache_hit_tokens']).toBe(8);
    expect(usage['prompt_cache_miss_tokens']).toBe((usage['prompt_tokens'] ?? 0) - 8);
  });

  it('in JSON mode answers an instance of the schema a system instruction names, else {"text": ...}', async () => {
    const schema = {
      type: 'object',
      properties: {
        city: { type: 'string' },
        population: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
      },
      required: ['city', 'population', 'tags'],
      additionalProperties: false,
    };
    const instruction = `Reply with a single JSON object named "place" and nothing else.\nIt must conform to this JSON Schema:\n${JSON.stringify(schema)}`;
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: `Be brief.\n${instruction}\nAnswer in JSON.` },
      { role: 'user', content: 'Name a city.' },
    ];
    const format = { type: 'json_object' } as const;
    const shaped = await client.chat.completions.create({ ...chat, messages, response_format: format });
    const value = JSON.parse(shaped.choices[0]?.message.content ?? '') as Record<string, unknown>;
    expect(Object.keys(value).sort()).toEqual(['city', 'population', 'tags']);
    expect([typeof value['city'], Number.isInteger(value['population']), Array.isArray(value['tags'])]).toEqual([
      'string',
      true,
      true,
    ]);
    const streamed = await collect(
      await client.chat.completions.create({ ...chat, messages, response_format: format, stream: true }),
    );
    const streamedText = streamed.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(JSON.parse(streamedText)).toEqual(value);
    const plain = await client.chat.completions.create({
      ...chat,
      messages: [{ role: 'system', content: 'Answer in JSON.' }, messages[1]!],
      response_format: format,
    });
    expect(Object.keys(JSON.parse(plain.choices[0]?.message.content ?? '') as object)).toEqual(['text']);
  });
});

describe('DeepSeek simulator: tool calls', () => {
  it('calls tools like OpenAI (call_ ids, fragments with index), also in thinking mode with reasoning first', async () => {
    const params: ChatCompletionCreateParamsNonStreaming = {
      ...reasoner,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather,get_time]]' }],
    };
    const completion = await client.chat.completions.create(params);
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = choice?.message.tool_calls ?? [];
    expect(calls.map((call) => call.type === 'function' && [call.function.name, call.function.arguments])).toEqual([
      ['get_weather', '{"city":"Lisbon"}'],
      ['get_time', '{"zone":"Lisbon"}'],
    ]);
    expect(calls.every((call) => call.id.startsWith('call_'))).toBe(true);
    const chunks = await collect(await client.chat.completions.create({ ...params, stream: true }));
    const args = ['', ''];
    for (const chunk of chunks)
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) args[call.index] += call.function?.arguments ?? '';
    expect(args).toEqual(['{"city":"Lisbon"}', '{"zone":"Lisbon"}']);
  });

  it('continues a thinking-mode tool loop when the reasoning_content is replayed (DeepSeek reasoning in tool loops)', async () => {
    const params: ChatCompletionCreateParamsNonStreaming = {
      ...reasoner,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' }],
    };
    const first = (await client.chat.completions.create(params)).choices[0]?.message;
    const call = first?.tool_calls?.[0];
    const history: ChatCompletionMessageParam[] = [
      ...params.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: first?.tool_calls,
        reasoning_content: (first as WithReasoning).reasoning_content,
      } as ChatCompletionMessageParam,
      { role: 'tool', tool_call_id: call?.id ?? '', content: 'light rain' },
    ];
    const followUp = await client.chat.completions.create({ ...params, messages: history });
    expect(followUp.choices[0]?.message.content?.startsWith('Tool results: "light rain".')).toBe(true);
  });

  it('serves /v1/chat/completions and /models too, and refuses a bad key in its own words', async () => {
    const v1 = new OpenAI({ baseURL: `${simulator.baseUrls.deepseek}/v1`, apiKey: 'sk-ds', maxRetries: 0 });
    expect((await v1.chat.completions.create(chat)).choices[0]?.message.content).toBe(
      (await client.chat.completions.create(chat)).choices[0]?.message.content,
    );
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toEqual(['deepseek-chat', 'deepseek-reasoner']);
    const wrong = new OpenAI({ baseURL: simulator.baseUrls.deepseek, apiKey: 'sk-wrong-key', maxRetries: 0 });
    await expect(wrong.chat.completions.create(chat)).rejects.toMatchObject({
      status: 401,
      message: expect.stringContaining('Authentication Fails'),
    });
  });

  it('lets the OpenAI SDK read an in-stream error and skip keep-alives', async () => {
    let received = '';
    const attempt = (async () => {
      const stream = await client.chat.completions.create({
        ...chat,
        messages: [{ role: 'user', content: 'story [[sim error status=503 after=2]]' }],
        stream: true,
      });
      for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
    })();
    await expect(attempt).rejects.toBeInstanceOf(OpenAI.APIError);
    expect(received.length).toBeGreaterThan(0);
  });
});
