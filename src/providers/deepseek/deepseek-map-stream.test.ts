import { describe, expect, it } from 'vitest';
import { ResponseAccumulator, type CanonicalResponse } from '../../canonical/accumulate.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import type { OpenAIChatCompletion, OpenAIUsage } from '../../wire/openai-chat-wire.js';
import { mapOpenAIResponse, mapOpenAIUsage } from '../openai/openai-map-response.js';
import { OpenAIStreamMapper } from '../openai/openai-map-stream.js';

// DeepSeek replies are read by the OpenAI mappers; these fixtures are hand-written from
// docs/protocols/wire-deepseek.md#response, #stream.

const REASONER_USAGE: OpenAIUsage = {
  prompt_tokens: 20,
  completion_tokens: 180,
  total_tokens: 200,
  prompt_cache_hit_tokens: 12,
  prompt_cache_miss_tokens: 8,
  completion_tokens_details: { reasoning_tokens: 165 },
};

const CHUNK = '"id":"ds-1","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-reasoner"';

function sse(events: string[], lineEnd = '\n'): string {
  return events.map((event) => `${event}${lineEnd}${lineEnd}`).join('');
}

/** Thinking mode: keep-alives while waiting, reasoning deltas, content deltas, usage on the finish chunk. */
const REASONING_STREAM = sse([
  ': keep-alive',
  ': keep-alive',
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"finish_reason":null}]}`,
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"9.11 vs 9.8: "},"finish_reason":null}]}`,
  ': keep-alive',
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"compare tenths — 1 < 8."},"finish_reason":null}]}`,
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":"9.8 is larger","reasoning_content":null},"finish_reason":null}]}`,
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":" — Ωμέγα ✓.","reasoning_content":null},"finish_reason":null}]}`,
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":${JSON.stringify(REASONER_USAGE)}}`,
  'data: [DONE]',
]);

const REASONING_COMPLETION: OpenAIChatCompletion = {
  id: 'ds-1',
  object: 'chat.completion',
  created: 1767225600,
  model: 'deepseek-reasoner',
  choices: [
    {
      index: 0,
      finish_reason: 'stop',
      message: {
        role: 'assistant',
        reasoning_content: '9.11 vs 9.8: compare tenths — 1 < 8.',
        content: '9.8 is larger — Ωμέγα ✓.',
      },
    },
  ],
  usage: REASONER_USAGE,
};

const TOOL_USAGE: OpenAIUsage = {
  prompt_tokens: 900,
  completion_tokens: 60,
  total_tokens: 960,
  prompt_cache_hit_tokens: 768,
  prompt_cache_miss_tokens: 132,
  completion_tokens_details: { reasoning_tokens: 31 },
};

/** A thinking tool turn: reasoning, then two parallel calls in fragments, the finish, a separate usage chunk. CRLF. */
const TOOL_STREAM = sse(
  [
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Both cities are needed."},"finish_reason":null}],"usage":null}`,
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}],"usage":null}`,
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":"}}]},"finish_reason":null}],"usage":null}`,
    ': keep-alive',
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"Lisbon\\"}"}}]},"finish_reason":null}],"usage":null}`,
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Porto\\"}"}}]},"finish_reason":null}],"usage":null}`,
    `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls"}],"usage":null}`,
    `data: {${CHUNK},"choices":[],"usage":${JSON.stringify(TOOL_USAGE)}}`,
    'data: [DONE]',
  ],
  '\r\n',
);

const TOOL_COMPLETION: OpenAIChatCompletion = {
  id: 'ds-1',
  object: 'chat.completion',
  created: 1767225600,
  model: 'deepseek-reasoner',
  choices: [
    {
      index: 0,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        reasoning_content: 'Both cities are needed.',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Porto"}' } },
        ],
      },
    },
  ],
  usage: TOOL_USAGE,
};

/** Generation cut short for lack of capacity. */
const RESOURCE_STREAM = sse([
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"role":"assistant","content":"The answer is"},"finish_reason":null}]}`,
  `data: {${CHUNK},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"insufficient_system_resource"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":5}}`,
  'data: [DONE]',
]);

function mapBytes(pieces: Uint8Array[]): CanonicalEvent[] {
  const decoder = new SseDecoder();
  const mapper = new OpenAIStreamMapper('DeepSeek');
  const events: CanonicalEvent[] = [];
  for (const piece of pieces) for (const event of decoder.push(piece)) events.push(...mapper.map(event));
  for (const event of decoder.end()) events.push(...mapper.map(event));
  return [...events, ...mapper.end()];
}

function mapStream(text: string): CanonicalEvent[] {
  return mapBytes([new TextEncoder().encode(text)]);
}

function fold(events: readonly CanonicalEvent[]): CanonicalResponse {
  const accumulator = new ResponseAccumulator();
  for (const event of events) accumulator.apply(event);
  return accumulator.response;
}

describe('DeepSeek stream and response mapping', () => {
  it('maps reasoning deltas then content, skipping keep-alive comments, with usage on the finish chunk', () => {
    const events = mapStream(REASONING_STREAM);
    const response = fold(events);
    expect(response.content).toEqual([
      { type: 'reasoning', text: '9.11 vs 9.8: compare tenths — 1 < 8.' },
      { type: 'text', text: '9.8 is larger — Ωμέγα ✓.' },
    ]);
    expect(response.finishReason).toBe('stop');
    expect(response.usageReported).toBe(true);
    // The empty reasoning_content of the role chunk opens nothing; the reasoning block closes before the text opens.
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === 'reasoning-start')).toHaveLength(1);
    expect(types.indexOf('reasoning-end')).toBeLessThan(types.indexOf('text-start'));
    expect(types.indexOf('finish')).toBeLessThan(types.indexOf('usage'));
  });

  it("maps DeepSeek's cache split: hit → cache read, miss → input; reasoning inside output", () => {
    const usage = fold(mapStream(REASONING_STREAM)).usage;
    expect(usage).toEqual({
      inputTokens: 8,
      cacheReadTokens: 12,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 180,
      reasoningTokens: 165,
      raw: REASONER_USAGE,
    });
  });

  it("takes DeepSeek's hit/miss counts over its undocumented prompt_tokens_details.cached_tokens", () => {
    const usage = mapOpenAIUsage({ ...REASONER_USAGE, prompt_tokens_details: { cached_tokens: 3 } });
    expect(usage).toMatchObject({ inputTokens: 8, cacheReadTokens: 12 });
  });

  it('tool calls numbered per response: parallel tool calls stay separate calls, keyed by their index', () => {
    const response = fold(mapStream(TOOL_STREAM));
    expect(response.content).toEqual([
      { type: 'reasoning', text: 'Both cities are needed.' },
      { type: 'tool-call', id: 'call_a', name: 'get_weather', argumentsJson: '{"city":"Lisbon"}' },
      { type: 'tool-call', id: 'call_b', name: 'get_weather', argumentsJson: '{"city":"Porto"}' },
    ]);
    expect(response.finishReason).toBe('tool-calls');
  });

  it('usage lost in streams: usage with cache tokens arriving after the finish chunk is carried through the stream', () => {
    expect(fold(mapStream(TOOL_STREAM)).usage).toMatchObject({
      inputTokens: 132,
      cacheReadTokens: 768,
      outputTokens: 60,
      reasoningTokens: 31,
    });
  });

  it('keeps the last usage when DeepSeek sends it on the finish chunk and again in a usage chunk', () => {
    const finalUsage = { ...REASONER_USAGE, completion_tokens: 181, total_tokens: 201 };
    const twice = REASONING_STREAM.replace(
      'data: [DONE]',
      `data: {${CHUNK},"choices":[],"usage":${JSON.stringify(finalUsage)}}\n\ndata: [DONE]`,
    );
    expect(fold(mapStream(twice)).usage.outputTokens).toBe(181);
  });

  it('maps insufficient_system_resource to a length finish, keeping the raw reason', () => {
    const response = fold(mapStream(RESOURCE_STREAM));
    expect(response).toMatchObject({ finishReason: 'length', rawFinishReason: 'insufficient_system_resource' });
    expect(response.content).toEqual([{ type: 'text', text: 'The answer is' }]);
    const completion: OpenAIChatCompletion = {
      ...REASONING_COMPLETION,
      choices: [
        {
          index: 0,
          finish_reason: 'insufficient_system_resource',
          message: { role: 'assistant', content: 'The answer is' },
        },
      ],
    };
    expect(fold(mapOpenAIResponse(completion))).toMatchObject({
      finishReason: 'length',
      rawFinishReason: 'insufficient_system_resource',
    });
  });

  it('gives the same events however the bytes are split, at every byte boundary', () => {
    for (const fixture of [REASONING_STREAM, TOOL_STREAM, RESOURCE_STREAM]) {
      const bytes = new TextEncoder().encode(fixture);
      const whole = JSON.stringify(mapBytes([bytes]));
      for (let splitAt = 1; splitAt < bytes.length; splitAt++) {
        expect(JSON.stringify(mapBytes([bytes.subarray(0, splitAt), bytes.subarray(splitAt)]))).toBe(whole);
      }
      const oneByteAtATime = Array.from({ length: bytes.length }, (_, index) => bytes.subarray(index, index + 1));
      expect(JSON.stringify(mapBytes(oneByteAtATime))).toBe(whole);
    }
  });

  it('the stream folds to the same reply as the non-stream mapping', () => {
    expect(fold(mapStream(REASONING_STREAM))).toEqual(fold(mapOpenAIResponse(REASONING_COMPLETION)));
    expect(fold(mapStream(TOOL_STREAM))).toEqual(fold(mapOpenAIResponse(TOOL_COMPLETION)));
  });

  it('a stream of keep-alives that ends without a reply is an upstream fault', () => {
    expect(() => mapStream(sse([': keep-alive', ': keep-alive']))).toThrow(/before the reply was complete/);
  });
});
