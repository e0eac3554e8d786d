import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new OpenAI({ baseURL: simulator.baseUrls.openai, apiKey: 'any-key', maxRetries: 0 });
});
afterAll(() => simulator.close());

const user = { role: 'user', content: 'hi' };

/** Sends `body` as-is (the SDK's types would refuse most of these) and returns the SDK's error. */
async function rejection(body: Record<string, unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await client.post('/chat/completions', { body });
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('request was accepted');
}

async function expectBadRequest(
  body: Record<string, unknown>,
  expected: { message: string | RegExp; param: string | null; code?: string | null },
): Promise<void> {
  const error = await rejection(body);
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  expect(error.type).toBe('invalid_request_error');
  expect(error.param).toBe(expected.param);
  if (expected.code !== undefined) expect(error.code).toBe(expected.code);
  if (typeof expected.message === 'string') expect(error.error).toMatchObject({ message: expected.message });
  else expect(error.message).toMatch(expected.message);
}

describe('OpenAI simulator: request validation', () => {
  it('requires a JSON body', async () => {
    const response = await fetch(`${simulator.baseUrls.openai}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: '{"model":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { message: expect.stringContaining('We could not parse the JSON body'), type: 'invalid_request_error' },
    });
  });

  it('requires model and a non-empty messages array', async () => {
    await expectBadRequest({ messages: [user] }, { message: 'you must provide a model parameter', param: null });
    await expectBadRequest(
      { model: 'gpt-5.5' },
      { message: "Missing required parameter: 'messages'.", param: 'messages', code: 'missing_required_parameter' },
    );
    await expectBadRequest(
      { model: 'gpt-5.5', messages: [] },
      { message: /empty array/, param: 'messages', code: 'empty_array' },
    );
    await expectBadRequest(
      { model: 42, messages: [user] },
      { message: /expected a string, but got an integer/, param: 'model', code: 'invalid_type' },
    );
  });

  it('checks roles and content rules per role', async () => {
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      { message: /Invalid value: 'robot'/, param: 'messages[0].role', code: 'invalid_value' },
    );
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'user' }] },
      { message: "Missing required parameter: 'messages[0].content'.", param: 'messages[0].content' },
    );
    await expectBadRequest(
      { model: 'm', messages: [user, { role: 'assistant', content: null }] },
      { message: "Invalid value for 'content': expected a string, got null.", param: 'messages.[1].content' },
    );
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'x' } }] }, user] },
      { message: "Invalid value: 'image_url'. Supported values are: 'text'.", param: 'messages[0].content[0].type' },
    );
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] },
      { message: /messages\[0\]\.content\[0\]\.text/, param: 'messages[0].content[0].text' },
    );
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      { message: /image_url\.url/, param: 'messages[0].content[0].image_url.url' },
    );
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'user', content: [] }] },
      { message: /empty array/, param: 'messages[0].content', code: 'empty_array' },
    );
  });

  it('enforces the tool message ordering rule', async () => {
    const call = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    await expectBadRequest(
      { model: 'm', messages: [user, { role: 'tool', tool_call_id: 'call_a', content: 'x' }] },
      {
        message:
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        param: 'messages.[1].role',
      },
    );
    await expectBadRequest(
      { model: 'm', messages: [user, call, user, { role: 'tool', tool_call_id: 'call_a', content: 'x' }] },
      { message: /The following tool_call_ids did not have response messages: call_a/, param: 'messages.[1].role' },
    );
    await expectBadRequest(
      { model: 'm', messages: [user, call] },
      { message: /did not have response messages: call_a/, param: 'messages.[1].role' },
    );
    await expectBadRequest(
      { model: 'm', messages: [user, call, { role: 'tool', content: 'x' }] },
      { message: "Missing required parameter: 'messages[2].tool_call_id'.", param: 'messages[2].tool_call_id' },
    );
  });

  it('checks numeric ranges and list sizes', async () => {
    const ok = { model: 'gpt-5.5', messages: [user] };
    await expectBadRequest(
      { ...ok, temperature: 2.5 },
      {
        message: /decimal above maximum value. Expected a value <= 2, but got 2.5/,
        param: 'temperature',
        code: 'decimal_above_max_value',
      },
    );
    await expectBadRequest(
      { ...ok, top_p: -0.1 },
      { message: /below minimum value/, param: 'top_p', code: 'decimal_below_min_value' },
    );
    await expectBadRequest({ ...ok, presence_penalty: 3 }, { message: /<= 2/, param: 'presence_penalty' });
    await expectBadRequest({ ...ok, frequency_penalty: -3 }, { message: />= -2/, param: 'frequency_penalty' });
    await expectBadRequest(
      { ...ok, n: 0 },
      { message: /integer below minimum value/, param: 'n', code: 'integer_below_min_value' },
    );
    await expectBadRequest(
      { ...ok, max_tokens: 0 },
      { message: /Expected a value >= 1, but got 0/, param: 'max_tokens' },
    );
    await expectBadRequest(
      { ...ok, max_completion_tokens: 1.5 },
      { message: /expected an integer, but got a decimal/, param: 'max_completion_tokens', code: 'invalid_type' },
    );
    await expectBadRequest(
      { ...ok, temperature: 'hot' },
      { message: /expected a decimal, but got a string/, param: 'temperature' },
    );
    await expectBadRequest(
      { ...ok, stop: ['a', 'b', 'c', 'd', 'e'] },
      { message: /array too long/, param: 'stop', code: 'array_above_max_length' },
    );
    await expectBadRequest(
      { ...ok, stream_options: { include_usage: true } },
      { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: 'stream_options' },
    );
  });

  it('checks the prompt-cache fields as OpenAI does: a key of at most 64 characters, a known retention', async () => {
    const ok = { model: 'gpt-4o', messages: [user] };
    await expectBadRequest(
      { ...ok, prompt_cache_key: 'k'.repeat(65) },
      {
        message:
          "Invalid 'prompt_cache_key': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.",
        param: 'prompt_cache_key',
        code: 'string_above_max_length',
      },
    );
    await expectBadRequest(
      { ...ok, prompt_cache_retention: '1h' },
      { message: /Supported values are: 'in_memory', and '24h'/, param: 'prompt_cache_retention' },
    );
    const accepted = await client.chat.completions.create({
      ...ok,
      messages: [{ role: 'user', content: 'hi' }],
      prompt_cache_key: 'k'.repeat(64),
      prompt_cache_retention: '24h',
    });
    expect(accepted.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it('applies the o-series rules', async () => {
    await expectBadRequest(
      { model: 'o4-mini', messages: [user], max_tokens: 100 },
      {
        message:
          "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        param: 'max_tokens',
        code: 'unsupported_parameter',
      },
    );
    await expectBadRequest(
      { model: 'o3', messages: [user], temperature: 0.2 },
      {
        message:
          "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.",
        param: 'temperature',
        code: 'unsupported_value',
      },
    );
    const accepted = await client.chat.completions.create({
      model: 'o3',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 1,
      max_completion_tokens: 5,
    });
    expect(accepted.usage?.completion_tokens).toBeLessThanOrEqual(5);
  });

  it('reports bad simulator directives instead of ignoring them', async () => {
    await expectBadRequest(
      { model: 'm', messages: [{ role: 'user', content: 'hi [[sim fault=explode]]' }] },
      { message: /Simulator directive: unknown fault 'explode'/, param: null, code: 'simulator_directive' },
    );
  });
});

describe('OpenAI simulator: web search', () => {
  const search = {
    model: 'gpt-5-search-api',
    messages: [{ role: 'user' as const, content: 'Where is the toll plaza?' }],
  };

  it('takes web_search_options only on search models, which refuse sampling settings and function tools', async () => {
    await expectBadRequest(
      { model: 'gpt-5.4', messages: [user], web_search_options: {} },
      { message: "Unknown parameter: 'web_search_options'.", param: 'web_search_options', code: 'unknown_parameter' },
    );
    await expectBadRequest(
      { ...search, web_search_options: {}, temperature: 0.2, top_p: 0.5 },
      { message: 'Model incompatible request arguments supplied: temperature, top_p', param: null },
    );
    await expectBadRequest(
      { ...search, tools: [{ type: 'function', function: { name: 'lookup' } }] },
      { message: 'Model incompatible request argument supplied: tools', param: null },
    );
    await expectBadRequest(
      { ...search, web_search_options: { user_location: { approximate: { country: 'PT' } } } },
      { message: /Invalid value/, param: 'web_search_options.user_location.type' },
    );
  });

  it('annotates a searched reply with url_citation spans, whole and streamed alike', async () => {
    const whole = await client.chat.completions.create({ ...search, web_search_options: {} } as never);
    const message = (whole as OpenAI.ChatCompletion).choices[0]!.message;
    expect(message.annotations).toHaveLength(2);
    const span = message.annotations![0]!.url_citation;
    expect(span).toMatchObject({ url: expect.stringMatching(/^https:\/\/search\.example\//), start_index: 0 });
    expect(message.content!.slice(span.start_index, span.end_index)).not.toBe('');
    const stream = await client.chat.completions.create({ ...search, web_search_options: {}, stream: true } as never);
    const streamed: unknown[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      const delta = chunk.choices[0]?.delta as { annotations?: unknown[] } | undefined;
      streamed.push(...(delta?.annotations ?? []));
    }
    expect(streamed).toEqual(message.annotations);
    const plain = await client.chat.completions.create({ ...search });
    expect(plain.choices[0]!.message.annotations).toEqual([]);
  });
});
