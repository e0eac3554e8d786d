import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { VendorName } from '../../canonical/request.js';
import { AnthropicStreamEncoder } from './anthropic-encode-stream.js';

const USAGE = {
  inputTokens: 44,
  cacheReadTokens: 768,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 19,
  reasoningTokens: 0,
};

interface Frame {
  event: string;
  data: any;
}

function encode(
  events: CanonicalEvent[],
  vendor: VendorName = 'openai',
  promptTokens?: number,
): { frames: Frame[]; text: string } {
  const encoder = new AnthropicStreamEncoder({ id: 'msg_1', model: 'beta-5.4', vendor, promptTokens });
  const text = events.map((event) => encoder.encode(event)).join('') + encoder.finish(USAGE);
  const frames = text
    .split('\n\n')
    .filter((part) => part.startsWith('event: '))
    .map((part) => {
      const [eventLine, dataLine] = part.split('\n');
      return { event: eventLine!.slice(7), data: JSON.parse(dataLine!.slice(6)) };
    });
  return { frames, text };
}

/** Folds frames the way Anthropic clients do, checking the sequencing rules as it goes. */
function fold(frames: Frame[]) {
  const content: any[] = [];
  let open: number | null = null;
  for (const { event, data } of frames) {
    if (event === 'content_block_start') {
      expect(open).toBeNull();
      expect(data.index).toBe(content.length);
      open = data.index;
      content.push({ ...data.content_block, json: '' });
    } else if (event === 'content_block_delta') {
      expect(data.index).toBe(open);
      const block = content[data.index];
      if (data.delta.type === 'text_delta') block.text += data.delta.text;
      if (data.delta.type === 'thinking_delta') block.thinking += data.delta.thinking;
      if (data.delta.type === 'signature_delta') block.signature += data.delta.signature;
      if (data.delta.type === 'input_json_delta') block.json += data.delta.partial_json;
    } else if (event === 'content_block_stop') {
      expect(data.index).toBe(open);
      open = null;
    }
  }
  expect(open).toBeNull();
  return content;
}

describe('AnthropicStreamEncoder', () => {
  it('writes interleaved parallel tool calls as whole sequential blocks (interleaved tool-call deltas)', () => {
    const { frames } = encode([
      { type: 'response-start', id: 'x', model: 'gpt', created: 1 },
      { type: 'text-start', blockId: 'text-1' },
      { type: 'text-delta', blockId: 'text-1', text: 'Checking.' },
      { type: 'text-end', blockId: 'text-1' },
      { type: 'tool-call-start', blockId: 'tool-0', id: 'call_a', name: 'get_time' },
      { type: 'tool-call-delta', blockId: 'tool-0', argumentsDelta: '{"tz":' },
      { type: 'tool-call-start', blockId: 'tool-1', id: 'call.b', name: 'get_time' },
      { type: 'tool-call-delta', blockId: 'tool-1', argumentsDelta: '{"tz":"JST"}' },
      { type: 'tool-call-delta', blockId: 'tool-0', argumentsDelta: '"UTC"}' },
      { type: 'tool-call-end', blockId: 'tool-0' },
      { type: 'tool-call-end', blockId: 'tool-1' },
      { type: 'finish', reason: 'tool-calls', rawReason: 'tool_calls' },
    ]);
    expect(frames.slice(0, 2).map((frame) => frame.event)).toEqual(['message_start', 'ping']);
    const content = fold(frames);
    expect(content).toEqual([
      { type: 'text', text: 'Checking.', citations: null, json: '' },
      { type: 'tool_use', id: 'call_a', name: 'get_time', input: {}, caller: { type: 'direct' }, json: '{"tz":"UTC"}' },
      { type: 'tool_use', id: 'call_b', name: 'get_time', input: {}, caller: { type: 'direct' }, json: '{"tz":"JST"}' },
    ]);
    const delta = frames.find((frame) => frame.event === 'message_delta')!;
    expect(delta.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null, stop_details: null, container: null },
      usage: {
        input_tokens: 44,
        output_tokens: 19,
        cache_read_input_tokens: 768,
        cache_creation_input_tokens: 0,
        output_tokens_details: null,
        server_tool_use: null,
      },
    });
    expect(frames[frames.length - 1]!.event).toBe('message_stop');
  });

  it("message_start carries the vendor's start counts, else the gateway's count, else 0; message_delta the final ones", () => {
    const told = {
      inputTokens: 40,
      cacheReadTokens: 700,
      cacheWriteTokens: 5,
      cacheWrite1hTokens: 0,
      outputTokens: 0,
      reasoningTokens: 0,
    };
    const startUsage = (events: CanonicalEvent[]) =>
      encode(events).frames.find((frame) => frame.event === 'message_start')!.data.message.usage;
    expect(
      startUsage([{ type: 'response-start', id: 'x', model: 'claude', created: 1, inputUsage: told }]),
    ).toMatchObject({
      input_tokens: 40,
      cache_read_input_tokens: 700,
      cache_creation_input_tokens: 5,
      output_tokens: 0,
    });
    // The vendor's counts win over the gateway's.
    expect(
      encode([{ type: 'response-start', id: 'x', model: 'claude', created: 1, inputUsage: told }], 'anthropic', 39)
        .frames[0]!.data.message.usage.input_tokens,
    ).toBe(40);
    // An OpenAI-format vendor tells nothing at the start: the gateway's count, and message_delta the vendor's.
    const counted = encode([{ type: 'response-start', id: 'x', model: 'gpt', created: 1 }], 'openai', 45);
    expect(counted.frames[0]!.data.message.usage).toMatchObject({
      input_tokens: 45,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
    expect(counted.frames.find((frame) => frame.event === 'message_delta')!.data.usage.input_tokens).toBe(44);
    // Neither: 0, not a guess.
    const { frames } = encode([{ type: 'response-start', id: 'x', model: 'gpt', created: 1 }]);
    expect(frames.find((frame) => frame.event === 'message_start')!.data.message.usage).toMatchObject({
      input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      output_tokens: 0,
    });
    expect(frames.find((frame) => frame.event === 'message_delta')!.data.usage).toMatchObject({
      input_tokens: 44,
      cache_read_input_tokens: 768,
      output_tokens: 19,
    });
  });

  it('never writes an empty text block (empty text blocks)', () => {
    const { frames } = encode([
      { type: 'response-start', id: 'x', model: 'gpt', created: 1 },
      { type: 'text-start', blockId: 't' },
      { type: 'text-end', blockId: 't' },
      { type: 'tool-call-start', blockId: 'c', id: 'call_1', name: 'f' },
      { type: 'tool-call-end', blockId: 'c' },
    ]);
    expect(fold(frames)).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'f', input: {}, caller: { type: 'direct' }, json: '' },
    ]);
  });

  it("tags another vendor's reasoning signature with its origin, and unsigned reasoning too", () => {
    const signed = fold(
      encode(
        [
          { type: 'reasoning-start', blockId: 'r' },
          { type: 'reasoning-delta', blockId: 'r', text: 'thinking…' },
          { type: 'reasoning-signature', blockId: 'r', signature: 'abc' },
          { type: 'reasoning-end', blockId: 'r' },
        ],
        'gemini',
      ).frames,
    );
    expect(signed[0]).toMatchObject({ type: 'thinking', thinking: 'thinking…', signature: 'tg1.gemini.abc' });
    const unsigned = fold(
      encode(
        [
          { type: 'reasoning-start', blockId: 'r' },
          { type: 'reasoning-delta', blockId: 'r', text: 'hmm' },
          { type: 'reasoning-end', blockId: 'r' },
        ],
        'deepseek',
      ).frames,
    );
    expect(unsigned[0]).toMatchObject({ signature: 'tg1.deepseek.' });
    const anthropic = fold(
      encode(
        [
          { type: 'reasoning-start', blockId: 'r' },
          { type: 'reasoning-delta', blockId: 'r', text: 'hmm' },
          { type: 'reasoning-signature', blockId: 'r', signature: 'EqQBCgIYAhIM' },
          { type: 'reasoning-end', blockId: 'r' },
        ],
        'anthropic',
      ).frames,
    );
    expect(anthropic[0]).toMatchObject({ signature: 'EqQBCgIYAhIM' });
  });

  it('holds message_delta until the end, whatever order finish and usage arrive in (usage after the finish chunk)', () => {
    const { frames } = encode([
      { type: 'text-start', blockId: 't' },
      { type: 'text-delta', blockId: 't', text: 'Hi' },
      { type: 'finish', reason: 'stop-sequence', rawReason: 'stop_sequence', stopSequence: 'END' },
      { type: 'text-end', blockId: 't' },
    ]);
    const names = frames.map((frame) => frame.event);
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(frames.at(-2)!.data.delta).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      stop_details: null,
      container: null,
    });
  });

  it('ends with data: [DONE] after message_stop, and renders errors as an error event', () => {
    expect(encode([]).text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\ndata: [DONE]\n\n')).toBe(
      true,
    );
    const encoder = new AnthropicStreamEncoder({ id: 'msg_1', model: 'm', vendor: 'openai' });
    encoder.encode({ type: 'response-start', id: 'x', model: 'm', created: 1 });
    expect(encoder.error(new GatewayError('upstream_unavailable', 'Overloaded'))).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\ndata: [DONE]\n\n',
    );
  });
});

describe('AnthropicStreamEncoder, server tools', () => {
  it('streams a search as Anthropic does: the call’s input as JSON text, the result whole, citations as deltas', () => {
    const { frames } = encode(
      [
        { type: 'response-start', id: 'x', model: 'gemini', created: 1 },
        { type: 'text-start', blockId: 't' },
        { type: 'text-delta', blockId: 't', text: 'Tolls rose.' },
        {
          type: 'text-citation',
          blockId: 't',
          citation: { url: 'https://a.example/', title: 'A', citedText: 'Tolls rose.' },
        },
        { type: 'text-end', blockId: 't' },
        { type: 'server-tool-call', blockId: 's', id: 'srvtoolu_1', name: 'web_search', input: { query: 'tolls' } },
        {
          type: 'server-tool-result',
          blockId: 'r',
          result: {
            type: 'server-tool-result',
            toolCallId: 'srvtoolu_1',
            resultType: 'web_search_tool_result',
            searchResults: [{ url: 'https://a.example/', title: 'A' }],
          },
        },
        { type: 'usage', usage: { ...USAGE, serverToolUse: { webSearchRequests: 1, webFetchRequests: 0 } } },
        { type: 'finish', reason: 'stop', rawReason: 'STOP' },
      ],
      'gemini',
    );
    const citations = frames.filter((frame) => frame.data.delta?.type === 'citations_delta');
    expect(citations.map((frame) => frame.data.delta.citation)).toEqual([
      {
        type: 'web_search_result_location',
        url: 'https://a.example/',
        title: 'A',
        cited_text: 'Tolls rose.',
        encrypted_index: '',
      },
    ]);
    expect(fold(frames)).toEqual([
      { type: 'text', text: 'Tolls rose.', citations: null, json: '' },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: {},
        caller: { type: 'direct' },
        json: '{"query":"tolls"}',
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        caller: { type: 'direct' },
        content: [
          { type: 'web_search_result', url: 'https://a.example/', title: 'A', page_age: null, encrypted_content: '' },
        ],
        json: '',
      },
    ]);
    const delta = frames.find((frame) => frame.event === 'message_delta')!;
    expect(delta.data.delta.stop_reason).toBe('end_turn');
  });
});
