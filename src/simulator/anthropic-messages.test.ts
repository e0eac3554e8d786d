import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replySeedText } from './anthropic/anthropic-prompt.js';
import type { AnthropicRequest } from './anthropic/anthropic-types.js';
import { startSimulator, type RunningSimulator } from './simulator-server.js';

let simulator: RunningSimulator;
let client: Anthropic;

beforeAll(async () => {
  simulator = await startSimulator({ apiKeys: ['sk-ant-test'] });
  client = new Anthropic({ baseURL: simulator.baseUrls.anthropic, apiKey: 'sk-ant-test', maxRetries: 0 });
});
afterAll(() => simulator.close());

const tokens = (text: string): number => encode(text).length;
const MODEL = 'claude-haiku-4-5';
const userText = 'Write two lines about a lighthouse keeper and the sea';
const request: MessageCreateParamsNonStreaming = {
  model: MODEL,
  max_tokens: 1024,
  system: 'You are terse.',
  messages: [{ role: 'user', content: userText }],
};
/** A real 1×1 PNG and the smallest PDF header: the simulator checks media bytes like Anthropic. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PDF = Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64');

interface RawEvent {
  event: string;
  data: Record<string, unknown>;
}

async function rawStream(body: object): Promise<{ text: string; events: RawEvent[] }> {
  const response = await fetch(`${simulator.baseUrls.anthropic}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await response.text();
  const events = text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const [eventLine = '', dataLine = ''] = block.split('\n');
      return {
        event: eventLine.replace('event: ', ''),
        data: JSON.parse(dataLine.replace('data: ', '')) as Record<string, unknown>,
      };
    });
  return { text, events };
}

describe('Anthropic simulator: replies', () => {
  it('answers a message with usage in Anthropic shape (input_tokens excludes cache)', async () => {
    const message = await client.messages.create(request);
    expect(message.id).toMatch(/^msg_01/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.content).toHaveLength(1);
    const block = message.content[0];
    if (block?.type !== 'text') throw new Error('expected a text block');
    expect(block.text.startsWith('You said: "Write two lines about a lighthouse keeper and ...".')).toBe(true);
    // system + 3, then 3 per message + its text (anthropic-prompt.ts).
    const input = 3 + tokens('You are terse.') + 3 + tokens(userText);
    expect(message.usage).toEqual({
      input_tokens: input,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: tokens(block.text),
      service_tier: 'standard',
    });
    const { response } = await client.messages.create(request).withResponse();
    expect(response.headers.get('request-id')).toMatch(/^req_sim_/);
  });

  it('streams the full event sequence: message_start, block start, ping, deltas, stop, message_delta, message_stop', async () => {
    const { text, events } = await rawStream(request);
    expect(text).not.toContain('[DONE]');
    for (const event of events) expect(event.data['type']).toBe(event.event);
    const names = events.map((event) => event.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(names.slice(3, -3).every((name) => name === 'content_block_delta')).toBe(true);
    const start = events[0]?.data['message'] as Record<string, unknown>;
    expect(start).toMatchObject({ content: [], stop_reason: null, stop_sequence: null, usage: { output_tokens: 1 } });
    const messageDelta = events.at(-2)?.data;
    const nonStream = await client.messages.create(request);
    // Cumulative: the totals, input counts repeated.
    expect(messageDelta).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: {
        input_tokens: nonStream.usage.input_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: nonStream.usage.output_tokens,
      },
    });
  });

  it('gives the same message streamed and not (SDK accumulation)', async () => {
    const [message, streamed] = await Promise.all([
      client.messages.create(request),
      client.messages.stream(request).finalMessage(),
    ]);
    expect(streamed.content).toEqual(message.content);
    expect(streamed.usage).toEqual(message.usage);
    expect([streamed.stop_reason, streamed.id]).toEqual([message.stop_reason, message.id]);
    const events: RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ ...request, stream: true })) events.push(event);
    expect(events.filter((event) => event.type === 'content_block_delta').length).toBeGreaterThan(5);
  });

  it('gives the same reply to the same conversation however it is spelled (strings or blocks, key order, breakpoints)', async () => {
    const tools = [{ name: 'lookup', input_schema: { type: 'object' as const } }];
    const spelled = await client.messages.create({
      ...request,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      tools,
      messages: [
        { role: 'user', content: [{ type: 'text', text: userText }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }] },
        {
          role: 'user',
          content: [{ tool_use_id: 'toolu_1', type: 'tool_result', content: [{ text: 'found', type: 'text' }] }],
        },
      ],
    });
    const plain = await client.messages.create({
      ...request,
      tools,
      messages: [
        { role: 'user', content: userText },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'found', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
    });
    expect(plain.content).toEqual(spelled.content);
    expect(plain.id).toBe(spelled.id);
  });

  it('seeds the reply without thinking signatures, which each simulator process keys its own way', () => {
    const replayed = (signature: string) =>
      replySeedText({
        ...request,
        messages: [
          { role: 'user', content: userText },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'Hmm.', signature }] },
          { role: 'user', content: 'More.' },
        ],
      } as AnthropicRequest);
    expect(replayed('c2lnbmVkIGhlcmU=')).toBe(replayed('c2lnbmVkIHRoZXJl'));
  });

  it('truncates at max_tokens with stop_reason max_tokens', async () => {
    const message = await client.messages.create({ ...request, max_tokens: 7 });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(7);
    const block = message.content[0];
    expect(block?.type === 'text' && tokens(block.text)).toBe(7);
    const streamed = await client.messages.stream({ ...request, max_tokens: 7 }).finalMessage();
    expect(streamed.content).toEqual(message.content);
    expect([streamed.stop_reason, streamed.usage.output_tokens]).toEqual(['max_tokens', 7]);
  });

  it('stops at a stop sequence and names it', async () => {
    const prompt: MessageCreateParamsNonStreaming = {
      ...request,
      messages: [{ role: 'user', content: 'the fox [[sim words=30]]' }],
    };
    const full = await client.messages.create(prompt);
    const fullText = full.content[0]?.type === 'text' ? full.content[0].text : '';
    const stopped = await client.messages.create({ ...prompt, stop_sequences: ['fox', 'never-present'] });
    expect(stopped.stop_reason).toBe('stop_sequence');
    expect(stopped.stop_sequence).toBe('fox');
    expect(stopped.content).toEqual([{ type: 'text', text: fullText.slice(0, fullText.indexOf('fox')) }]);
    const streamed = await client.messages.stream({ ...prompt, stop_sequences: ['fox'] }).finalMessage();
    expect([streamed.stop_reason, streamed.stop_sequence]).toEqual(['stop_sequence', 'fox']);
  });

  it('counts tokens with count_tokens exactly as the message usage reports them, images and documents included', async () => {
    const params: MessageCreateParamsNonStreaming = {
      ...request,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
          ],
        },
      ],
      tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
    };
    const message = await client.messages.create(params);
    const { max_tokens: _unused, ...countParams } = params;
    const counted = await client.messages.countTokens(countParams);
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
    // 1,600 per image and 1,500 per PDF, flat.
    const withoutMedia = await client.messages.countTokens({
      ...countParams,
      messages: [{ role: 'user', content: 'What is in these?' }],
    });
    expect(counted.input_tokens - withoutMedia.input_tokens).toBe(1_600 + 1_500);
  });

  it('reports simulated cache reads and writes in the usage, streamed too', async () => {
    const prompt: MessageCreateParamsNonStreaming = {
      ...request,
      messages: [{ role: 'user', content: `${userText} [[sim cache-read=10 cache-write=4]]` }],
    };
    const message = await client.messages.create(prompt);
    const total = (
      await client.messages.countTokens({ model: MODEL, system: request.system, messages: prompt.messages })
    ).input_tokens;
    expect(message.usage).toMatchObject({
      input_tokens: total - 14,
      cache_read_input_tokens: 10,
      cache_creation_input_tokens: 4,
    });
    expect(message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 0 });
    const { events } = await rawStream(prompt);
    expect(events.at(-2)?.data['usage']).toMatchObject({
      input_tokens: total - 14,
      cache_read_input_tokens: 10,
      cache_creation_input_tokens: 4,
    });
  });

  it('splits simulated cache writes into 5-minute and 1-hour ones (cache-write-1h), in message_start too', async () => {
    const prompt: MessageCreateParamsNonStreaming = {
      ...request,
      messages: [{ role: 'user', content: `${userText} [[sim cache-read=10 cache-write=4 cache-write-1h=3]]` }],
    };
    const message = await client.messages.create(prompt);
    expect(message.usage).toMatchObject({ cache_read_input_tokens: 10, cache_creation_input_tokens: 7 });
    expect(message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 3 });
    const { events } = await rawStream(prompt);
    const start = events.find((event) => event.data['type'] === 'message_start')?.data['message'] as { usage: unknown };
    expect(start.usage).toMatchObject({
      cache_creation_input_tokens: 7,
      cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 3 },
    });
  });
});

describe('Anthropic simulator: HTTP surface', () => {
  const url = (): string => `${simulator.baseUrls.anthropic}/v1/messages`;
  const body = JSON.stringify(request);

  it('accepts x-api-key or a bearer token, and refuses a missing or wrong key with authentication_error', async () => {
    const bearer = new Anthropic({
      baseURL: simulator.baseUrls.anthropic,
      authToken: 'sk-ant-test',
      apiKey: null,
      maxRetries: 0,
    });
    expect((await bearer.messages.create(request)).type).toBe('message');
    const missing = await fetch(url(), { method: 'POST', headers: { 'anthropic-version': '2023-06-01' }, body });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: 'x-api-key header is required' },
    });
    const wrong = new Anthropic({ baseURL: simulator.baseUrls.anthropic, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.messages.create(request)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('requires the anthropic-version header, as the real API does', async () => {
    const response = await fetch(url(), { method: 'POST', headers: { 'x-api-key': 'sk-ant-test' }, body });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
    });
  });

  it('lists models and answers unknown paths with not_found_error', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toContain(MODEL);
    const unknown = await fetch(`${simulator.baseUrls.anthropic}/v1/complete`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-ant-test' },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});

describe('Anthropic simulator: faults through the SDK', () => {
  const ask = (text: string): MessageCreateParamsNonStreaming => ({
    model: MODEL,
    max_tokens: 500,
    messages: [{ role: 'user', content: text }],
  });

  it('answers 529 with overloaded_error, and rate limits with 429 and retry-after', async () => {
    const overloaded = await client.messages
      .create(ask('hi [[sim error status=529]]'))
      .catch((caught: unknown) => caught);
    expect(overloaded).toBeInstanceOf(Anthropic.InternalServerError);
    expect(overloaded).toMatchObject({
      status: 529,
      error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    });
    const limited = await client.messages
      .create(ask('hi [[sim rate-limit retry-after=3]]'))
      .catch((caught: unknown) => caught);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limited as InstanceType<typeof Anthropic.RateLimitError>).headers?.get('retry-after')).toBe('3');
  });

  it('ends a stream with an error event the SDK throws as an APIError', async () => {
    let deltas = 0;
    const attempt = (async () => {
      for await (const event of await client.messages.create({
        ...ask('story [[sim error status=529 after=3]]'),
        stream: true,
      })) {
        if (event.type === 'content_block_delta') deltas++;
      }
    })();
    await expect(attempt).rejects.toMatchObject({ error: { type: 'error', error: { type: 'overloaded_error' } } });
    expect(deltas).toBe(3);
  });
});
