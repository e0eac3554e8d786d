import { describe, expect, it } from 'vitest';
import { ResponseAccumulator, type CanonicalResponse } from '../../canonical/accumulate.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages-wire.js';
import { mapAnthropicMessage, type AnthropicMappingOptions } from './anthropic-map-response.js';
import { AnthropicStreamMapper } from './anthropic-map-stream.js';

function sse(events: ReadonlyArray<readonly [string, string]>, lineEnd = '\n'): string {
  return events.map(([name, data]) => `event: ${name}${lineEnd}data: ${data}${lineEnd}${lineEnd}`).join('');
}

// docs/protocols/wire-anthropic.md#stream, verbatim: a text block, an interleaved ping, a tool call streamed in two
// pieces.
const TOOL_STREAM = sse([
  [
    'message_start',
    '{"type":"message_start","message":{"id":"msg_01XyZ","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":42,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":1}}}',
  ],
  ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
  ['ping', '{"type":"ping"}'],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":0}'],
  [
    'content_block_start',
    '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01Ab","name":"lookup_weather","input":{}}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Lis"}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"bon\\"}"}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":1}'],
  [
    'message_delta',
    '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":37}}',
  ],
  ['message_stop', '{"type":"message_stop"}'],
]);

// Hand-written in the same form: signed thinking, redacted thinking, multi-byte text, a tool whose only
// argument piece is "" and one with no deltas at all, pings anywhere, two cumulative message_deltas (the newer
// form repeats input counts).
const THINKING_EVENTS = [
  [
    'message_start',
    '{"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":310,"cache_creation_input_tokens":2048,"cache_read_input_tokens":0,"output_tokens":3}}}',
  ],
  ['ping', '{"type":"ping"}'],
  [
    'content_block_start',
    '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user asks for the time; "}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I should call now()."}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIARgCIkBsig=="}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":0}'],
  [
    'content_block_start',
    '{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":1}'],
  ['content_block_start', '{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}'],
  ['content_block_delta', '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Café ☕ — "}}'],
  ['ping', '{"type":"ping"}'],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"checking 🕒."}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":2}'],
  [
    'content_block_start',
    '{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_now","name":"now","input":{}}}',
  ],
  [
    'content_block_delta',
    '{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":3}'],
  [
    'content_block_start',
    '{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_tz","name":"timezone","input":{}}}',
  ],
  ['content_block_stop', '{"type":"content_block_stop","index":4}'],
  [
    'message_delta',
    '{"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},"usage":{"output_tokens":40}}',
  ],
  [
    'message_delta',
    '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":310,"cache_creation_input_tokens":2048,"cache_read_input_tokens":0,"output_tokens":95,"output_tokens_details":{"thinking_tokens":60}}}',
  ],
  ['message_stop', '{"type":"message_stop"}'],
] as const;
const THINKING_STREAM = sse(THINKING_EVENTS, '\r\n');

/** The Message a non-stream call would have returned for THINKING_STREAM. */
const THINKING_MESSAGE: AnthropicMessage = {
  id: 'msg_02',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-5',
  content: [
    {
      type: 'thinking',
      thinking: 'The user asks for the time; I should call now().',
      signature: 'EqQBCkYIARgCIkBsig==',
    },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
    { type: 'text', text: 'Café ☕ — checking 🕒.' },
    { type: 'tool_use', id: 'toolu_now', name: 'now', input: {} },
    { type: 'tool_use', id: 'toolu_tz', name: 'timezone', input: {} },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: {
    input_tokens: 310,
    cache_creation_input_tokens: 2048,
    cache_read_input_tokens: 0,
    output_tokens: 95,
    output_tokens_details: { thinking_tokens: 60 },
  },
};

const OPTIONS: AnthropicMappingOptions = { created: 1700000000 };

function mapPieces(pieces: Uint8Array[], options: AnthropicMappingOptions = OPTIONS): CanonicalEvent[] {
  const decoder = new SseDecoder();
  const mapper = new AnthropicStreamMapper('Anthropic', options);
  const events = [...pieces.flatMap((piece) => decoder.push(piece)), ...decoder.end()].flatMap((event) =>
    mapper.map(event),
  );
  return [...events, ...mapper.end()];
}

function mapWhole(text: string, options: AnthropicMappingOptions = OPTIONS): CanonicalEvent[] {
  return mapPieces([new TextEncoder().encode(text)], options);
}

function fold(events: CanonicalEvent[]): CanonicalResponse {
  const accumulator = new ResponseAccumulator();
  for (const event of events) accumulator.apply(event);
  return accumulator.response;
}

function inBlocks(events: CanonicalEvent[], ...blockIds: string[]): CanonicalEvent[] {
  return events.filter((event) => 'blockId' in event && blockIds.includes(event.blockId));
}

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('AnthropicStreamMapper', () => {
  it('maps the documented stream: ping ignored, block ids by index, the {} placeholder never sent, finish and usage at message_stop', () => {
    expect(mapWhole(TOOL_STREAM)).toEqual([
      {
        type: 'response-start',
        id: 'msg_01XyZ',
        model: 'claude-sonnet-4-5',
        created: 1700000000,
        // message_start's prompt counts, told before the reply.
        inputUsage: {
          inputTokens: 42,
          cacheReadTokens: 1200,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens: 0,
          reasoningTokens: 0,
        },
      },
      { type: 'text-start', blockId: 'b0' },
      { type: 'text-delta', blockId: 'b0', text: 'Let me check.' },
      { type: 'text-end', blockId: 'b0' },
      { type: 'tool-call-start', blockId: 'b1', id: 'toolu_01Ab', name: 'lookup_weather' },
      { type: 'tool-call-delta', blockId: 'b1', argumentsDelta: '{"city": "Lis' },
      { type: 'tool-call-delta', blockId: 'b1', argumentsDelta: 'bon"}' },
      { type: 'tool-call-end', blockId: 'b1' },
      { type: 'finish', reason: 'tool-calls', rawReason: 'tool_use' },
      {
        type: 'usage',
        usage: {
          inputTokens: 42,
          cacheReadTokens: 1200,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens: 37,
          reasoningTokens: 0,
          raw: { input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 1200, output_tokens: 37 },
        },
      },
    ]);
  });

  it('maps signed thinking (signature raw), redacted thinking, text, and tools with empty or no argument deltas', () => {
    const events = mapWhole(THINKING_STREAM);
    expect(inBlocks(events, 'b0', 'b1')).toEqual([
      { type: 'reasoning-start', blockId: 'b0' },
      { type: 'reasoning-delta', blockId: 'b0', text: 'The user asks for the time; ' },
      { type: 'reasoning-delta', blockId: 'b0', text: 'I should call now().' },
      { type: 'reasoning-signature', blockId: 'b0', signature: 'EqQBCkYIARgCIkBsig==' },
      { type: 'reasoning-end', blockId: 'b0' },
      { type: 'reasoning-start', blockId: 'b1', redactedData: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
      { type: 'reasoning-end', blockId: 'b1' },
    ]);
    // A tool with no arguments: one "{}" delta at its stop, never a "{}" before real argument pieces.
    expect(inBlocks(events, 'b3', 'b4')).toEqual([
      { type: 'tool-call-start', blockId: 'b3', id: 'toolu_now', name: 'now' },
      { type: 'tool-call-delta', blockId: 'b3', argumentsDelta: '{}' },
      { type: 'tool-call-end', blockId: 'b3' },
      { type: 'tool-call-start', blockId: 'b4', id: 'toolu_tz', name: 'timezone' },
      { type: 'tool-call-delta', blockId: 'b4', argumentsDelta: '{}' },
      { type: 'tool-call-end', blockId: 'b4' },
    ]);
    const reply = fold(events);
    expect(reply.content[2]).toEqual({ type: 'text', text: 'Café ☕ — checking 🕒.' });
    expect(reply.finishReason).toBe('tool-calls');
  });

  it('message_delta usage is cumulative: the latest counts win, input/cache kept from message_start, one usage event', () => {
    const events = mapWhole(THINKING_STREAM);
    const usages = events.filter((event) => event.type === 'usage');
    expect(usages).toHaveLength(1);
    expect(usages[0]).toMatchObject({
      usage: {
        inputTokens: 310,
        cacheWriteTokens: 2048,
        cacheWrite1hTokens: 0,
        cacheReadTokens: 0,
        outputTokens: 95,
        reasoningTokens: 60,
      },
    });
    expect(events.at(-2)).toMatchObject({ type: 'finish' });
    expect(events.at(-1)).toMatchObject({ type: 'usage' });
  });

  it('gives the same events however the bytes are split (every boundary, multi-byte characters included)', () => {
    for (const stream of [TOOL_STREAM, THINKING_STREAM]) {
      const bytes = new TextEncoder().encode(stream);
      const whole = JSON.stringify(mapWhole(stream));
      for (let splitAt = 1; splitAt < bytes.length; splitAt++) {
        expect(JSON.stringify(mapPieces([bytes.subarray(0, splitAt), bytes.subarray(splitAt)]))).toBe(whole);
      }
      const singleBytes = Array.from(bytes, (_, index) => bytes.subarray(index, index + 1));
      expect(JSON.stringify(mapPieces(singleBytes))).toBe(whole);
    }
  });

  it('the folded stream equals the non-stream mapping of the equivalent Message', () => {
    const withoutRaw = (response: CanonicalResponse) => ({ ...response, usage: { ...response.usage, raw: null } });
    expect(withoutRaw(fold(mapWhole(THINKING_STREAM)))).toEqual(
      withoutRaw(fold(mapAnthropicMessage(THINKING_MESSAGE, OPTIONS))),
    );
    // The documented stream's arguments carry the vendor's spacing; as JSON values both modes agree too.
    const streamed = fold(mapWhole(TOOL_STREAM));
    const whole = fold(
      mapAnthropicMessage(
        {
          id: 'msg_01XyZ',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_01Ab', name: 'lookup_weather', input: { city: 'Lisbon' } },
          ],
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage: { input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 1200, output_tokens: 37 },
        },
        OPTIONS,
      ),
    );
    const normalise = (response: CanonicalResponse) => ({
      ...response,
      content: response.content.map((block) =>
        block.type === 'tool-call' ? { ...block, argumentsJson: JSON.parse(block.argumentsJson) as unknown } : block,
      ),
    });
    expect(normalise(streamed)).toEqual(normalise(whole));
  });

  it('an error event after the 200 is thrown as the gateway error of its type', () => {
    const stream =
      TOOL_STREAM.split('event: content_block_stop')[0] +
      sse([['error', '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}']]);
    const error = thrown(() => mapWhole(stream));
    expect(error.code).toBe('upstream_unavailable');
    expect(error.upstreamCode).toBe('overloaded_error');
    expect(error.message).toMatch(/Overloaded/);
  });

  it.each([
    ['rate_limit_error', 'upstream_rate_limited'],
    ['api_error', 'upstream_server_error'],
    ['timeout_error', 'upstream_timeout'],
    ['invalid_request_error', 'upstream_invalid_request'],
    ['authentication_error', 'upstream_auth_failed'],
    ['a_new_error', 'upstream_server_error'],
  ])('error event %s → %s', (type, code) => {
    const mapper = new AnthropicStreamMapper('Anthropic', OPTIONS);
    expect(
      thrown(() =>
        mapper.map({ event: 'error', data: JSON.stringify({ type: 'error', error: { type, message: 'm' } }) }),
      ).code,
    ).toBe(code);
  });

  it('a stream cut before message_stop is an upstream fault, not a short reply', () => {
    for (const cut of [
      TOOL_STREAM.split('event: message_stop')[0]!,
      TOOL_STREAM.slice(0, TOOL_STREAM.indexOf('bon') + 2),
    ]) {
      const error = thrown(() => mapWhole(cut));
      expect(error.code).toBe('upstream_bad_response');
      expect(error.message).toMatch(/ended the stream before the reply was complete/);
    }
  });

  it('a stop sequence is carried on the finish', () => {
    const stream = sse([
      [
        'message_start',
        '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}',
      ],
      ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
      [
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two"}}',
      ],
      ['content_block_stop', '{"type":"content_block_stop","index":0}'],
      [
        'message_delta',
        '{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"three"},"usage":{"output_tokens":3}}',
      ],
      ['message_stop', '{"type":"message_stop"}'],
    ]);
    expect(mapWhole(stream).at(-2)).toEqual({
      type: 'finish',
      reason: 'stop-sequence',
      rawReason: 'stop_sequence',
      stopSequence: 'three',
    });
  });

  it('JSON mode: the JSON tool streams as text and the turn ends as end_turn', () => {
    const stream = sse([
      [
        'message_start',
        '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}',
      ],
      [
        'content_block_start',
        '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_j","name":"weather_report","input":{}}}',
      ],
      [
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}',
      ],
      [
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\":"}}',
      ],
      [
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\\"Lisbon\\"}"}}',
      ],
      ['content_block_stop', '{"type":"content_block_stop","index":0}'],
      [
        'message_delta',
        '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}',
      ],
      ['message_stop', '{"type":"message_stop"}'],
    ]);
    const events = mapWhole(stream, { ...OPTIONS, jsonToolName: 'weather_report' });
    expect(events.slice(1, -1)).toEqual([
      { type: 'text-start', blockId: 'b0' },
      { type: 'text-delta', blockId: 'b0', text: '{"city":' },
      { type: 'text-delta', blockId: 'b0', text: '"Lisbon"}' },
      { type: 'text-end', blockId: 'b0' },
      { type: 'finish', reason: 'stop', rawReason: 'end_turn' },
    ]);
  });

  it('content before message_start and non-JSON data are bad upstream responses', () => {
    const mapper = new AnthropicStreamMapper('Anthropic', OPTIONS);
    expect(
      thrown(() => mapper.map({ event: 'content_block_stop', data: '{"type":"content_block_stop","index":0}' })).code,
    ).toBe('upstream_bad_response');
    expect(thrown(() => new AnthropicStreamMapper('Anthropic', OPTIONS).map({ data: '{"type":' })).message).toMatch(
      /not valid JSON/,
    );
  });

  it('ignores unknown event types and delta types, and anything after message_stop', () => {
    const stream = TOOL_STREAM.replace(
      'event: content_block_stop',
      'event: future_event\ndata: {"type":"future_event"}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"future_delta","value":{}}}\n\nevent: content_block_stop',
    );
    const extra = `${stream}event: content_block_start\ndata: {"type":"content_block_start","index":9,"content_block":{"type":"text","text":"late"}}\n\n`;
    expect(mapWhole(extra)).toEqual(mapWhole(TOOL_STREAM));
  });
});

describe('AnthropicStreamMapper, text deltas read by their learned shape', () => {
  const delta = (index: number, text: string) =>
    `{"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}`;
  const events: Array<readonly [string, string]> = [
    [
      'message_start',
      '{"type":"message_start","message":{"id":"msg_9","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":1}}}',
    ],
    ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
    ['content_block_delta', delta(0, 'Hel')],
    ['content_block_delta', delta(0, 'lo "x"\n')],
    ['content_block_delta', delta(0, '')],
    ['content_block_stop', '{"type":"content_block_stop","index":0}'],
    // Same shape, a block that is closed: nothing, as when parsed.
    ['content_block_delta', delta(0, 'late')],
    ['content_block_start', '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}'],
    ['content_block_delta', delta(1, 'one')],
    ['content_block_delta', delta(1, 'two')],
    ['content_block_stop', '{"type":"content_block_stop","index":1}'],
    [
      'message_delta',
      '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}',
    ],
    ['message_stop', '{"type":"message_stop"}'],
  ];

  it('maps a stream exactly as parsing every event would', () => {
    const mapper = new AnthropicStreamMapper('Anthropic', { created: 1 });
    const decoder = new SseDecoder();
    const out = decoder.push(new TextEncoder().encode(sse(events))).flatMap((event) => mapper.map(event));
    expect(out.filter((event) => event.type !== 'usage' && event.type !== 'response-start')).toEqual([
      { type: 'text-start', blockId: 'b0' },
      { type: 'text-delta', blockId: 'b0', text: 'Hel' },
      { type: 'text-delta', blockId: 'b0', text: 'lo "x"\n' },
      { type: 'text-end', blockId: 'b0' },
      { type: 'text-start', blockId: 'b1' },
      { type: 'text-delta', blockId: 'b1', text: 'one' },
      { type: 'text-delta', blockId: 'b1', text: 'two' },
      { type: 'text-end', blockId: 'b1' },
      { type: 'finish', reason: 'stop', rawReason: 'end_turn' },
    ]);
  });
});

describe('AnthropicStreamMapper, server tools', () => {
  const page = {
    type: 'web_search_result',
    url: 'https://a.example/',
    title: 'A',
    encrypted_content: 'E',
    page_age: null,
  };
  const citation = {
    type: 'web_search_result_location',
    url: 'https://a.example/',
    title: 'A',
    cited_text: 'a',
    encrypted_index: 'I',
  };
  const result = { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [page] };
  const start = (index: number, block: unknown) =>
    ['content_block_start', JSON.stringify({ type: 'content_block_start', index, content_block: block })] as const;
  const delta = (index: number, value: unknown) =>
    ['content_block_delta', JSON.stringify({ type: 'content_block_delta', index, delta: value })] as const;
  const stop = (index: number) =>
    ['content_block_stop', JSON.stringify({ type: 'content_block_stop', index })] as const;
  const SEARCH_STREAM = sse([
    [
      'message_start',
      '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}',
    ],
    start(0, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
    delta(0, { type: 'input_json_delta', partial_json: '{"query":' }),
    delta(0, { type: 'input_json_delta', partial_json: '"tolls"}' }),
    stop(0),
    start(1, result),
    stop(1),
    start(2, { type: 'text', text: '', citations: [] }),
    delta(2, { type: 'citations_delta', citation }),
    delta(2, { type: 'text_delta', text: 'Tolls rose.' }),
    stop(2),
    [
      'message_delta',
      '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9,"server_tool_use":{"web_search_requests":1,"web_fetch_requests":0}}}',
    ],
    ['message_stop', '{"type":"message_stop"}'],
  ]);

  it('relays the search call whole, its result as received, the citation and the search count', () => {
    const reply = fold(mapWhole(SEARCH_STREAM));
    expect(reply.content).toEqual([
      { type: 'server-tool-call', id: 'srvtoolu_1', name: 'web_search', input: { query: 'tolls' } },
      {
        type: 'server-tool-result',
        toolCallId: 'srvtoolu_1',
        resultType: 'web_search_tool_result',
        searchResults: [{ url: 'https://a.example/', title: 'A' }],
        anthropicBlock: result,
      },
      {
        type: 'text',
        text: 'Tolls rose.',
        citations: [{ url: 'https://a.example/', title: 'A', citedText: 'a', anthropic: citation }],
      },
    ]);
    expect(reply.usage.serverToolUse).toEqual({ webSearchRequests: 1, webFetchRequests: 0 });
  });
});
