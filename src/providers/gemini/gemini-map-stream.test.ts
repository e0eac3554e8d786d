import { describe, expect, it } from 'vitest';
import { ResponseAccumulator, type CanonicalResponse } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import { mapGeminiFinishReason } from './gemini-map-finish.js';
import { mapGeminiResponse } from './gemini-map-response.js';
import { GeminiStreamMapper } from './gemini-map-stream.js';
import type { GeminiResponseMapperOptions } from './gemini-response-mapper.js';
import { decodeGeminiToolCallId } from './gemini-tool-call-id.js';
import type { GeminiGenerateContentResponse } from '../../wire/gemini-generate-wire.js';

/** Deterministic ids and clock, so two mappings of the same reply can be compared whole. */
function mapperOptions(): GeminiResponseMapperOptions {
  let nonce = 0;
  return {
    vendorLabel: 'Gemini',
    fallbackModel: 'gemini-2.5-flash',
    mintNonce: () => `n${++nonce}`,
    now: () => 1_700_000_000,
  };
}

/**
 * Hand-written from docs/protocols/wire-gemini.md#stream: `data: <GenerateContentResponse>` events separated by CRLF
 * blank lines.
 */
function sse(chunks: readonly object[]): string {
  return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join('');
}

const HEAD = { modelVersion: 'gemini-2.5-flash', responseId: 'resp-1' };

// Thoughts (the second one signed), then answer text across chunks with a multi-byte character, then usage with
// thoughts and cached tokens on the last chunk only.
const THOUGHT_CHUNKS: GeminiGenerateContentResponse[] = [
  {
    candidates: [
      { content: { role: 'model', parts: [{ text: '**Checking** the forecast', thought: true }] }, index: 0 },
    ],
    usageMetadata: { promptTokenCount: 96, totalTokenCount: 96 },
    ...HEAD,
  },
  {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ text: ' for Lisbon.', thought: true, thoughtSignature: 'CpYBAb4+9vt/sig==' }],
        },
        index: 0,
      },
    ],
    ...HEAD,
  },
  { candidates: [{ content: { role: 'model', parts: [{ text: 'Chuva leve — ' }] }, index: 0 }], ...HEAD },
  {
    candidates: [{ content: { role: 'model', parts: [{ text: '14 °C.' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: 96,
      cachedContentTokenCount: 64,
      candidatesTokenCount: 14,
      thoughtsTokenCount: 120,
      totalTokenCount: 230,
    },
    ...HEAD,
  },
];
const THOUGHT_STREAM = sse(THOUGHT_CHUNKS);

// Parallel calls in separate chunks, each at part position 0, without a finish reason; STOP arrives in a
// later chunk that has no call (an empty text part), as newer models do.
const TOOL_CHUNKS: GeminiGenerateContentResponse[] = [
  { candidates: [{ content: { role: 'model', parts: [{ text: 'Checking both cities.' }] }, index: 0 }], ...HEAD },
  {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { functionCall: { name: 'lookup_weather', args: { city: 'Lisbon' } }, thoughtSignature: 'SIG/one+==' },
          ],
        },
        index: 0,
      },
    ],
    ...HEAD,
  },
  {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ functionCall: { name: 'lookup_weather', args: { city: 'Porto', days: [1, 2] } } }],
        },
        index: 0,
      },
    ],
    ...HEAD,
  },
  {
    candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150 },
    ...HEAD,
  },
];
const TOOL_STREAM = sse(TOOL_CHUNKS);

function mapStream(text: string, splitAt?: number): CanonicalEvent[] {
  const bytes = new TextEncoder().encode(text);
  const decoder = new SseDecoder();
  const mapper = new GeminiStreamMapper(mapperOptions());
  const pieces = splitAt === undefined ? [bytes] : [bytes.subarray(0, splitAt), bytes.subarray(splitAt)];
  const events = [...pieces.flatMap((piece) => decoder.push(piece)), ...decoder.end()].flatMap((event) =>
    mapper.map(event),
  );
  return [...events, ...mapper.end()];
}

function fold(events: readonly CanonicalEvent[]): CanonicalResponse {
  const accumulator = new ResponseAccumulator();
  for (const event of events) accumulator.apply(event);
  return accumulator.response;
}

describe('GeminiStreamMapper', () => {
  it('maps thoughts to a signed reasoning block and text to one text block continuing across chunks', () => {
    const events = mapStream(THOUGHT_STREAM);
    const response = fold(events);
    expect(response).toMatchObject({
      id: 'resp-1',
      model: 'gemini-2.5-flash',
      created: 1_700_000_000,
      finishReason: 'stop',
      rawFinishReason: 'STOP',
    });
    expect(response.content).toEqual([
      // The signature travels raw: the client protocol tags it with its origin vendor.
      { type: 'reasoning', text: '**Checking** the forecast for Lisbon.', signature: 'CpYBAb4+9vt/sig==' },
      { type: 'text', text: 'Chuva leve — 14 °C.' },
    ]);
    const types = events.map((event) => event.type);
    expect(types.indexOf('reasoning-end')).toBeLessThan(types.indexOf('text-start'));
    expect(types.filter((type) => type === 'text-start')).toHaveLength(1);
  });

  it('Gemini thoughts count as output: output counts thoughts beside candidates; input excludes cached tokens; usage is emitted once, the last seen', () => {
    const events = mapStream(THOUGHT_STREAM);
    const usages = events.filter((event) => event.type === 'usage');
    expect(usages).toHaveLength(1);
    expect(fold(events).usage).toEqual({
      inputTokens: 32,
      cacheReadTokens: 64,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 134,
      reasoningTokens: 120,
      raw: THOUGHT_CHUNKS[3]!.usageMetadata,
    });
    // The finish comes last, after the usage, both at the end of the body.
    expect(events.slice(-2).map((event) => event.type)).toEqual(['usage', 'finish']);
  });

  it('tool calls numbered per response: parallel calls in separate chunks get distinct blocks from a per-response counter', () => {
    const response = fold(mapStream(TOOL_STREAM));
    expect(response.content.map((block) => block.type)).toEqual(['text', 'tool-call', 'tool-call']);
    const calls = response.content.filter((block) => block.type === 'tool-call');
    expect(calls.map((block) => [block.name, block.argumentsJson])).toEqual([
      ['lookup_weather', '{"city":"Lisbon"}'],
      ['lookup_weather', '{"city":"Porto","days":[1,2]}'],
    ]);
    expect(new Set(calls.map((block) => block.id)).size).toBe(2);
    const starts = mapStream(TOOL_STREAM).filter((event) => event.type === 'tool-call-start');
    expect(starts.map((event) => event.blockId)).toEqual(['tool-1', 'tool-2']);
  });

  it('Gemini STOP after tool calls: finishes with tool-calls when STOP arrives in a later, call-free chunk', () => {
    const response = fold(mapStream(TOOL_STREAM));
    expect(response.finishReason).toBe('tool-calls');
    expect(response.rawFinishReason).toBe('STOP');
  });

  it('Gemini thought signatures on calls: the signature of a call (and Gemini’s call id) ride in the tool-call id; unsigned calls get plain minted ids', () => {
    const calls = fold(mapStream(TOOL_STREAM)).content.filter((block) => block.type === 'tool-call');
    expect(calls[0]!.id).toMatch(/^call_n\d+__tgsig__[A-Za-z0-9_-]+$/);
    expect(decodeGeminiToolCallId(calls[0]!.id)).toEqual({ thoughtSignature: 'SIG/one+==' });
    expect(calls[1]!.id).toMatch(/^call_n\d+$/);
    const withId = sse([
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [{ functionCall: { id: 'fc-1', name: 'f', args: {} }, thoughtSignature: 'c2ln' }],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        ...HEAD,
      },
    ]);
    const [only] = fold(mapStream(withId)).content;
    expect(only?.type === 'tool-call' && decodeGeminiToolCallId(only.id)).toEqual({
      geminiId: 'fc-1',
      thoughtSignature: 'c2ln',
    });
  });

  it('gives the same events however the bytes are split, at every byte boundary', () => {
    for (const stream of [THOUGHT_STREAM, TOOL_STREAM]) {
      const whole = JSON.stringify(mapStream(stream));
      const length = new TextEncoder().encode(stream).length;
      for (let splitAt = 1; splitAt < length; splitAt += 1)
        expect(JSON.stringify(mapStream(stream, splitAt))).toBe(whole);
    }
  });

  it('accepts LF-only framing as well as CRLF', () => {
    expect(JSON.stringify(mapStream(THOUGHT_STREAM.replaceAll('\r\n', '\n')))).toBe(
      JSON.stringify(mapStream(THOUGHT_STREAM)),
    );
  });

  it('a stream that ends without any finish reason is an upstream fault', () => {
    const cut = sse(TOOL_CHUNKS.slice(0, 3));
    expect(() => mapStream(cut)).toThrow(GatewayError);
    try {
      mapStream(cut);
    } catch (error) {
      expect((error as GatewayError).code).toBe('upstream_bad_response');
    }
    // A last event cut before its blank line is discarded by the decoder: still no finish.
    expect(() => mapStream(TOOL_STREAM.slice(0, -4))).toThrow(/before it was complete/);
  });

  it('an in-band error object becomes the gateway error of its code', () => {
    const mapper = new GeminiStreamMapper(mapperOptions());
    mapper.map({ data: JSON.stringify(TOOL_CHUNKS[0]) });
    let caught: unknown;
    try {
      mapper.map({ data: '{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect(caught).toMatchObject({ code: 'upstream_unavailable', upstreamCode: 'UNAVAILABLE' });
    expect((caught as GatewayError).message).toContain('The model is overloaded.');
  });

  it('a non-JSON data line is reported as a bad upstream response', () => {
    const mapper = new GeminiStreamMapper(mapperOptions());
    expect(() => mapper.map({ data: '{"candidates":[' })).toThrow(/not valid JSON/);
  });

  it('a blocked prompt (promptFeedback, no candidates) finishes as content-filter with empty content', () => {
    const response = fold(
      mapStream(
        sse([
          {
            promptFeedback: { blockReason: 'PROHIBITED_CONTENT' },
            usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 },
            ...HEAD,
          },
        ]),
      ),
    );
    expect(response.content).toEqual([]);
    expect(response.finishReason).toBe('content-filter');
    expect(response.rawFinishReason).toBe('PROHIBITED_CONTENT');
    expect(response.usage.inputTokens).toBe(12);
  });
});

describe('mapGeminiResponse (non-stream)', () => {
  it('folds to the same reply as the stream of the same content', () => {
    const whole: GeminiGenerateContentResponse = {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: '**Checking** the forecast for Lisbon.', thought: true, thoughtSignature: 'CpYBAb4+9vt/sig==' },
              { text: 'Chuva leve — 14 °C.' },
            ],
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: THOUGHT_CHUNKS[3]!.usageMetadata,
      ...HEAD,
    };
    // The prompt counts told at the start may grow a cache split by the last chunk; the billed usage is the same.
    const withoutStart = (response: ReturnType<typeof fold>) => ({ ...response, inputUsage: undefined });
    expect(withoutStart(fold(mapGeminiResponse(whole, mapperOptions())))).toEqual(
      withoutStart(fold(mapStream(THOUGHT_STREAM))),
    );

    const wholeTools: GeminiGenerateContentResponse = {
      candidates: [
        {
          content: {
            role: 'model',
            parts: TOOL_CHUNKS.flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? []),
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: TOOL_CHUNKS[3]!.usageMetadata,
      ...HEAD,
    };
    expect(withoutStart(fold(mapGeminiResponse(wholeTools, mapperOptions())))).toEqual(
      withoutStart(fold(mapStream(TOOL_STREAM))),
    );
  });

  it('Gemini STOP after tool calls, without streaming: STOP with calls is tool-calls; the model falls back to the upstream id', () => {
    const events = mapGeminiResponse(
      { candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }] }, finishReason: 'STOP' }] },
      mapperOptions(),
    );
    expect(events[0]).toMatchObject({ type: 'response-start', model: 'gemini-2.5-flash', id: 'gemini-n1' });
    expect(fold(events).finishReason).toBe('tool-calls');
  });

  it('a reply without a finish reason is refused', () => {
    expect(() =>
      mapGeminiResponse({ candidates: [{ content: { parts: [{ text: 'half' }] } }] }, mapperOptions()),
    ).toThrow(GatewayError);
  });
});

describe('mapGeminiFinishReason', () => {
  it.each([
    ['STOP', false, 'stop'],
    ['STOP', true, 'tool-calls'],
    ['MAX_TOKENS', false, 'length'],
    ['MAX_TOKENS', true, 'length'],
    ['SAFETY', true, 'content-filter'],
    ['PROHIBITED_CONTENT', false, 'content-filter'],
    ['BLOCKLIST', false, 'content-filter'],
    ['SPII', false, 'content-filter'],
    ['IMAGE_SAFETY', false, 'content-filter'],
    ['RECITATION', false, 'content-filter'],
    ['LANGUAGE', false, 'content-filter'],
    ['MALFORMED_FUNCTION_CALL', false, 'other'],
    ['OTHER', false, 'other'],
    ['OTHER', true, 'tool-calls'],
    ['FINISH_REASON_UNSPECIFIED', false, 'other'],
    ['SOMETHING_NEW', false, 'other'],
  ] as const)('%s (call seen: %s) → %s', (reason, sawCall, expected) => {
    expect(mapGeminiFinishReason(reason, sawCall)).toBe(expected);
  });
});
