import { describe, expect, it, vi } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import { mapOpenAIResponse } from './openai-map-response.js';
import { OpenAIStreamMapper } from './openai-map-stream.js';

// Hand-written from docs/protocols/wire-openai-chat.md#stream: a text run, then two parallel tool calls streamed in
// fragments.
const TOOL_STREAM = [
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Checking "},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"both…"},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"tz\\":"}}]},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"UTC\\"}"}}]},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\\"tz\\":\\"JST\\"}"}}]},"finish_reason":null}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}',
  '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":19,"total_tokens":831,"prompt_tokens_details":{"cached_tokens":768},"completion_tokens_details":{"reasoning_tokens":4}}}',
  '[DONE]',
]
  .map((data) => `data: ${data}\r\n\r\n`)
  .join('');

function mapWhole(text: string, splitAt?: number): CanonicalEvent[] {
  const bytes = new TextEncoder().encode(text);
  const decoder = new SseDecoder();
  const mapper = new OpenAIStreamMapper('OpenAI');
  const pieces = splitAt === undefined ? [bytes] : [bytes.subarray(0, splitAt), bytes.subarray(splitAt)];
  const events = pieces.flatMap((piece) => decoder.push(piece)).flatMap((event) => mapper.map(event));
  return [...events, ...mapper.end()];
}

describe('OpenAIStreamMapper', () => {
  it('maps text, parallel tool calls by index, the finish and cache-aware usage', () => {
    const events = mapWhole(TOOL_STREAM);
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(accumulator.response.content).toEqual([
      { type: 'text', text: 'Checking both…' },
      { type: 'tool-call', id: 'call_a', name: 'get_time', argumentsJson: '{"tz":"UTC"}' },
      { type: 'tool-call', id: 'call_b', name: 'get_time', argumentsJson: '{"tz":"JST"}' },
    ]);
    expect(accumulator.response.finishReason).toBe('tool-calls');
    expect(accumulator.response.usage).toMatchObject({
      inputTokens: 44,
      cacheReadTokens: 768,
      outputTokens: 19,
      reasoningTokens: 4,
    });
    // Blocks are closed before the finish, text before the first tool call starts.
    const types = events.map((event) => event.type);
    expect(types.indexOf('text-end')).toBeLessThan(types.indexOf('tool-call-start'));
    expect(types.lastIndexOf('tool-call-end')).toBeLessThan(types.indexOf('finish'));
  });

  it('gives the same events however the bytes are split (multi-byte characters included)', () => {
    const whole = JSON.stringify(mapWhole(TOOL_STREAM));
    const length = new TextEncoder().encode(TOOL_STREAM).length;
    for (let splitAt = 1; splitAt < length; splitAt += 7)
      expect(JSON.stringify(mapWhole(TOOL_STREAM, splitAt))).toBe(whole);
  });

  it('a stream cut before its finish is an upstream fault, not a short reply', () => {
    const cut = TOOL_STREAM.split('\r\n\r\n').slice(0, 3).join('\r\n\r\n') + '\r\n\r\n';
    expect(() => mapWhole(cut)).toThrow(GatewayError);
    expect(() => mapWhole(cut)).toThrow(/before the reply was complete/);
  });

  it('an error object in a data line becomes a gateway error', () => {
    const mapper = new OpenAIStreamMapper('OpenAI');
    expect(() => mapper.map({ data: '{"error":{"message":"overloaded","type":"server_error"}}' })).toThrow(
      /overloaded/,
    );
  });

  it('a non-JSON data line is reported as a bad upstream response', () => {
    const mapper = new OpenAIStreamMapper('OpenAI');
    expect(() => mapper.map({ data: '{"id":"c1",' })).toThrow(/not valid JSON/);
  });

  it('the non-stream mapping yields the same reply as the stream mapping', () => {
    const fromResponse = new ResponseAccumulator();
    mapOpenAIResponse({
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-x',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking both…',
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
              { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"JST"}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 812,
        completion_tokens: 19,
        total_tokens: 831,
        prompt_tokens_details: { cached_tokens: 768 },
        completion_tokens_details: { reasoning_tokens: 4 },
      },
    }).forEach((event) => {
      fromResponse.apply(event);
    });
    const fromStream = new ResponseAccumulator();
    for (const event of mapWhole(TOOL_STREAM)) fromStream.apply(event);
    expect({ ...fromResponse.response, usage: { ...fromResponse.response.usage, raw: null } }).toEqual({
      ...fromStream.response,
      usage: { ...fromStream.response.usage, raw: null },
    });
  });
});

describe('openAIToolCallId', () => {
  it('keeps short ids and shortens long foreign ids the same way every time', async () => {
    const { openAIToolCallId } = await import('./openai-build-request.js');
    expect(openAIToolCallId('call_abc')).toBe('call_abc');
    const long = `call_x__tgsig__${'A'.repeat(600)}`;
    expect(openAIToolCallId(long)).toHaveLength(40);
    expect(openAIToolCallId(long)).toBe(openAIToolCallId(long));
    expect(openAIToolCallId(long)).not.toBe(openAIToolCallId(`${long}B`));
  });
});

describe('OpenAIStreamMapper, text deltas read by their learned shape', () => {
  const head =
    '{"id":"c9","object":"chat.completion.chunk","created":1,"model":"gpt-x","system_fingerprint":"fp_1","choices":[{"index":0,"delta":';
  const text = (value: string, padding = '') =>
    `${head}{"content":${JSON.stringify(value)}},"logprobs":null,"finish_reason":null}]${padding}}`;
  const data = [
    `${head}{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
    text('Hel'),
    text('lo "you"'),
    text('\n日本'),
    text(''),
    `${head}{"reasoning_content":"hmm"},"logprobs":null,"finish_reason":null}]}`,
    text('after'),
    `${head}{"content":"","refusal":"no"},"logprobs":null,"finish_reason":null}]}`,
    text('padded', ',"obfuscation":"ab"'),
    text('padded', ',"obfuscation":"abc"'),
    `${head}{},"logprobs":null,"finish_reason":"stop"}]}`,
    `${head.slice(0, head.indexOf('"choices"'))}"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
    '[DONE]',
  ];

  it('maps a stream exactly as parsing every event would', () => {
    const events = mapWhole(data.map((each) => `data: ${each}\n\n`).join(''));
    expect(events.filter((event) => event.type !== 'usage' && event.type !== 'response-start')).toEqual([
      { type: 'text-start', blockId: 'text-1' },
      { type: 'text-delta', blockId: 'text-1', text: 'Hel' },
      { type: 'text-delta', blockId: 'text-1', text: 'lo "you"' },
      { type: 'text-delta', blockId: 'text-1', text: '\n日本' },
      { type: 'reasoning-start', blockId: 'reasoning' },
      { type: 'reasoning-delta', blockId: 'reasoning', text: 'hmm' },
      { type: 'reasoning-end', blockId: 'reasoning' },
      { type: 'text-delta', blockId: 'text-1', text: 'after' },
      { type: 'text-delta', blockId: 'text-1', text: 'no' },
      { type: 'text-delta', blockId: 'text-1', text: 'padded' },
      { type: 'text-delta', blockId: 'text-1', text: 'padded' },
      { type: 'text-end', blockId: 'text-1' },
      { type: 'finish', reason: 'stop', rawReason: 'stop' },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'usage', usage: { inputTokens: 5, outputTokens: 7 } });
  });

  it('parses only the events that are not plain text deltas of the learned shape', () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const mapper = new OpenAIStreamMapper('OpenAI');
      for (let i = 0; i < 50; i++) mapper.map({ data: text(` w${i}`) });
      expect(parse).toHaveBeenCalledTimes(1);
      // OpenAI's per-chunk padding (`obfuscation`) differs in every chunk: it does not break the shape.
      for (let i = 0; i < 50; i++) mapper.map({ data: text(` p${i}`, `,"obfuscation":"${'z'.repeat(i % 7)}"`) });
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
  });

  it('still fails on an error event shaped like a text delta', () => {
    const mapper = new OpenAIStreamMapper('OpenAI');
    mapper.map({ data: text('one') });
    mapper.map({ data: text('two') });
    expect(() => mapper.map({ event: 'error', data: text('three') })).toThrow(GatewayError);
  });
});

describe('OpenAIStreamMapper: several choices and log probabilities', () => {
  const chunk = (choices: object[], usage?: object) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...(usage ? { usage } : {}) })}\n\n`;
  const token = (text: string) => ({ token: text, logprob: -0.5, bytes: null, top_logprobs: [] });

  it('keeps each choice in its own blocks, with its finish and its text tokens', () => {
    const stream =
      chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) +
      chunk([{ index: 0, delta: { content: 'A' }, logprobs: { content: [token('A')] }, finish_reason: null }]) +
      chunk([{ index: 1, delta: { content: 'B' }, logprobs: { content: [token('B')] }, finish_reason: null }]) +
      chunk([{ index: 1, delta: {}, finish_reason: 'length' }]) +
      chunk([{ index: 0, delta: { content: 'a' }, logprobs: null, finish_reason: 'stop' }]) +
      chunk([], { prompt_tokens: 3, completion_tokens: 3 }) +
      'data: [DONE]\n\n';
    const accumulator = new ResponseAccumulator();
    for (const event of mapWhole(stream)) accumulator.apply(event);
    const response = accumulator.response;
    expect(response.content).toEqual([{ type: 'text', text: 'Aa' }]);
    expect(response.finishReason).toBe('stop');
    expect(response.logprobs).toEqual([{ token: 'A', logprob: -0.5, top: [] }]);
    expect(response.moreChoices).toEqual([
      {
        content: [{ type: 'text', text: 'B' }],
        finishReason: 'length',
        rawFinishReason: 'length',
        logprobs: [{ token: 'B', logprob: -0.5, top: [] }],
      },
    ]);
  });

  it('a stream whose second choice never finished was cut off', () => {
    const stream =
      chunk([{ index: 0, delta: { content: 'A' }, finish_reason: 'stop' }]) +
      chunk([{ index: 1, delta: { content: 'B' }, finish_reason: null }]) +
      'data: [DONE]\n\n';
    expect(() => mapWhole(stream)).toThrow(GatewayError);
  });

  it('a whole completion maps every choice', () => {
    const events = mapOpenAIResponse({
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'A' }, finish_reason: 'stop', logprobs: null },
        { index: 1, message: { role: 'assistant', content: 'B' }, finish_reason: 'stop', logprobs: null },
      ],
    });
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(accumulator.response.content).toEqual([{ type: 'text', text: 'A' }]);
    expect(accumulator.response.moreChoices?.[0]?.content).toEqual([{ type: 'text', text: 'B' }]);
  });
});
