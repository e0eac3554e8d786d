import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages-wire.js';
import { anthropicFinishEvent, mapAnthropicMessage } from './anthropic-map-response.js';

function message(overrides: Partial<AnthropicMessage>): AnthropicMessage {
  return {
    id: 'msg_01XyZ',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 42, output_tokens: 37 },
    ...overrides,
  };
}

function fold(events: CanonicalEvent[]): ResponseAccumulator['response'] {
  const accumulator = new ResponseAccumulator();
  for (const event of events) accumulator.apply(event);
  return accumulator.response;
}

describe('mapAnthropicMessage', () => {
  it('maps the documented example reply: text then a tool call, finish, cache-aware usage', () => {
    const events = mapAnthropicMessage(
      message({
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_01Ab', name: 'lookup_weather', input: { city: 'Lisbon' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 1200, output_tokens: 37 },
      }),
      { created: 1700000000 },
    );
    expect(events).toEqual([
      {
        type: 'response-start',
        id: 'msg_01XyZ',
        model: 'claude-sonnet-4-5',
        created: 1700000000,
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
      { type: 'tool-call-delta', blockId: 'b1', argumentsDelta: '{"city":"Lisbon"}' },
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

  it('thinking with its signature (raw, untagged), redacted thinking, then text; reasoning tokens from output_tokens_details', () => {
    const events = mapAnthropicMessage(
      message({
        content: [
          { type: 'thinking', thinking: 'The user wants…', signature: 'EqQBCkYIARgCIkB' },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va' },
          { type: 'text', text: 'Answer.' },
        ],
        usage: {
          input_tokens: 10,
          output_tokens: 90,
          cache_creation_input_tokens: 5,
          output_tokens_details: { thinking_tokens: 70 },
        },
      }),
      { created: 1 },
    );
    expect(events.slice(1, 8)).toEqual([
      { type: 'reasoning-start', blockId: 'b0' },
      { type: 'reasoning-delta', blockId: 'b0', text: 'The user wants…' },
      { type: 'reasoning-signature', blockId: 'b0', signature: 'EqQBCkYIARgCIkB' },
      { type: 'reasoning-end', blockId: 'b0' },
      { type: 'reasoning-start', blockId: 'b1', redactedData: 'EmwKAhgBEgy3va' },
      { type: 'reasoning-end', blockId: 'b1' },
      { type: 'text-start', blockId: 'b2' },
    ]);
    const reply = fold(events);
    expect(reply.content).toEqual([
      { type: 'reasoning', text: 'The user wants…', signature: 'EqQBCkYIARgCIkB' },
      { type: 'reasoning', text: '', redactedData: 'EmwKAhgBEgy3va' },
      { type: 'text', text: 'Answer.' },
    ]);
    expect(reply.usage).toMatchObject({
      inputTokens: 10,
      cacheWriteTokens: 5,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 90,
      reasoningTokens: 70,
    });
  });

  it('leaves out empty text blocks and relays server-tool blocks and citations', () => {
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
    const content = [
      { type: 'text', text: '' },
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
      result,
      { type: 'text', text: 'Found it.', citations: [citation] },
      { type: 'future_block' },
    ] as unknown as AnthropicMessage['content'];
    const reply = fold(mapAnthropicMessage(message({ content }), { created: 1 }));
    expect(reply.content).toEqual([
      { type: 'server-tool-call', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
      {
        type: 'server-tool-result',
        toolCallId: 'srvtoolu_1',
        resultType: 'web_search_tool_result',
        searchResults: [{ url: 'https://a.example/', title: 'A' }],
        anthropicBlock: result,
      },
      {
        type: 'text',
        text: 'Found it.',
        citations: [{ url: 'https://a.example/', title: 'A', citedText: 'a', anthropic: citation }],
      },
    ]);
  });

  it('reads the web searches and fetches of usage.server_tool_use', () => {
    const usage = { input_tokens: 1, output_tokens: 2, server_tool_use: { web_search_requests: 3 } };
    const reply = fold(mapAnthropicMessage(message({ usage } as never), { created: 1 }));
    expect(reply.usage.serverToolUse).toEqual({ webSearchRequests: 3, webFetchRequests: 0 });
  });

  it('a tool call without arguments carries "{}"', () => {
    const reply = fold(
      mapAnthropicMessage(
        message({ content: [{ type: 'tool_use', id: 't1', name: 'now', input: {} }], stop_reason: 'tool_use' }),
        { created: 1 },
      ),
    );
    expect(reply.content).toEqual([{ type: 'tool-call', id: 't1', name: 'now', argumentsJson: '{}' }]);
  });

  it('JSON mode: the JSON tool call becomes the reply text and the turn ends as end_turn', () => {
    const events = mapAnthropicMessage(
      message({
        content: [{ type: 'tool_use', id: 't1', name: 'weather_report', input: { city: 'Lisbon' } }],
        stop_reason: 'tool_use',
      }),
      { created: 1, jsonToolName: 'weather_report' },
    );
    const reply = fold(events);
    expect(reply.content).toEqual([{ type: 'text', text: '{"city":"Lisbon"}' }]);
    expect(reply.finishReason).toBe('stop');
    expect(reply.rawFinishReason).toBe('end_turn');
  });

  it('JSON mode: a real tool call beside the JSON reply keeps the tool-calls finish', () => {
    const reply = fold(
      mapAnthropicMessage(
        message({
          content: [
            { type: 'tool_use', id: 't1', name: 'get_time', input: {} },
            { type: 'tool_use', id: 't2', name: 'json_response', input: { a: 1 } },
          ],
          stop_reason: 'tool_use',
        }),
        { created: 1, jsonToolName: 'json_response' },
      ),
    );
    expect(reply.finishReason).toBe('tool-calls');
    expect(reply.content.map((block) => block.type)).toEqual(['tool-call', 'text']);
  });
});

describe('anthropicFinishEvent (docs/protocols/translation.md#stop-reasons-and-finish-reasons)', () => {
  it.each([
    ['end_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool-calls'],
    ['pause_turn', 'pause'],
    ['refusal', 'content-filter'],
    ['something_new', 'other'],
  ])('%s → %s', (raw, reason) => {
    expect(anthropicFinishEvent(raw, null, false)).toEqual({ type: 'finish', reason, rawReason: raw });
  });

  it('stop_sequence carries the matched sequence', () => {
    expect(anthropicFinishEvent('stop_sequence', 'END', false)).toEqual({
      type: 'finish',
      reason: 'stop-sequence',
      rawReason: 'stop_sequence',
      stopSequence: 'END',
    });
  });

  it('a missing stop reason is a plain stop', () => {
    expect(anthropicFinishEvent(null, null, false)).toEqual({ type: 'finish', reason: 'stop', rawReason: null });
  });
});
