import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  simulator = await startSimulator();
  client = new OpenAI({ baseURL: simulator.baseUrls.deepseek, apiKey: 'k', maxRetries: 0 });
});
afterAll(() => simulator.close());

type Body = Record<string, unknown>;
const user = { role: 'user', content: 'hi' };
const assistant = { role: 'assistant', content: 'hello' };
const TOOLS = [
  {
    type: 'function',
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];
const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } };

/** Sends `body` as-is and returns DeepSeek's 400 message (OpenAI-shaped body). */
async function refusal(body: Body): Promise<string> {
  try {
    await client.post('/chat/completions', { body });
  } catch (error) {
    if (!(error instanceof OpenAI.BadRequestError)) throw error;
    expect(error.type).toBe('invalid_request_error');
    return (error.error as { message: string }).message;
  }
  throw new Error('request was accepted');
}

describe('DeepSeek simulator: request validation', () => {
  it('applies the OpenAI dialect checks, with DeepSeek limits', async () => {
    expect(await refusal({ model: 'deepseek-chat', messages: [] })).toMatch(/empty array/);
    expect(await refusal({ model: 'deepseek-chat', messages: [user], temperature: 3 })).toMatch(
      /Expected a value <= 2/,
    );
    const stops = Array.from({ length: 16 }, (_, index) => `s${index}`);
    await expect(
      client.post('/chat/completions', { body: { model: 'deepseek-chat', messages: [user], stop: stops } }),
    ).resolves.toMatchObject({ object: 'chat.completion' });
    expect(await refusal({ model: 'deepseek-chat', messages: [user], stop: [...stops, 'x'] })).toMatch(
      /maximum length 16/,
    );
  });

  it('refuses unknown models, n > 1 and json_schema output', async () => {
    expect(await refusal({ model: 'gpt-4o', messages: [user] })).toBe('Model Not Exist');
    expect(await refusal({ model: 'deepseek-chat', messages: [user], n: 2 })).toBe(
      'Invalid n value (currently only n = 1 is supported)',
    );
    expect(
      await refusal({
        model: 'deepseek-chat',
        messages: [user],
        response_format: { type: 'json_schema', json_schema: { name: 'x' } },
      }),
    ).toBe('This response_format type is unavailable now');
  });

  it('refuses image parts: no vision', async () => {
    const image = {
      role: 'user',
      content: [
        { type: 'text', text: 'see' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ],
    };
    expect(await refusal({ model: 'deepseek-chat', messages: [image] })).toBe(
      'Failed to deserialize the JSON body into the target type: messages[0]: unknown variant `image_url`, expected `text`',
    );
  });

  it('refuses successive same-role messages on deepseek-reasoner (DeepSeek same-role runs), but not on deepseek-chat', async () => {
    expect(await refusal({ model: 'deepseek-reasoner', messages: [user, user] })).toBe(
      'deepseek-reasoner does not support successive user or assistant messages (messages[0] and messages[1] in your input). You should interleave the user/assistant messages in the message sequence.',
    );
    expect(await refusal({ model: 'deepseek-reasoner', messages: [user, assistant, assistant, user] })).toMatch(
      /\(messages\[1\] and messages\[2\] in your input\)/,
    );
    await expect(
      client.post('/chat/completions', { body: { model: 'deepseek-chat', messages: [user, user] } }),
    ).resolves.toMatchObject({ object: 'chat.completion' });
  });

  it('needs reasoning_content on replayed tool-call turns in thinking mode (DeepSeek reasoning in tool loops)', async () => {
    const loop = [
      user,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_1', content: 'rain' },
    ];
    expect(await refusal({ model: 'deepseek-reasoner', tools: TOOLS, messages: loop })).toBe(
      'Missing `reasoning_content` field in the assistant message at message index 1. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls',
    );
    // Turns before the latest user message need not keep it; non-thinking mode never does.
    await expect(
      client.post('/chat/completions', {
        body: { model: 'deepseek-reasoner', tools: TOOLS, messages: [...loop, assistant, user] },
      }),
    ).resolves.toMatchObject({ object: 'chat.completion' });
    await expect(
      client.post('/chat/completions', { body: { model: 'deepseek-chat', tools: TOOLS, messages: loop } }),
    ).resolves.toMatchObject({ object: 'chat.completion' });
  });

  it('refuses logprobs in thinking mode', async () => {
    expect(await refusal({ model: 'deepseek-reasoner', messages: [user], logprobs: true })).toBe(
      'logprobs and top_logprobs are not supported in thinking mode',
    );
  });

  it('answers a body that is not JSON in its own words', async () => {
    const response = await fetch(`${simulator.baseUrls.deepseek}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: '{',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { message: 'Failed to parse the request body as JSON', type: 'invalid_request_error' },
    });
  });
});
