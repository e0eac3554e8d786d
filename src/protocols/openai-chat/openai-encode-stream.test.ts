import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { OpenAIChatStreamEncoder } from './openai-encode-stream.js';

const EVENTS: CanonicalEvent[] = [
  { type: 'response-start', id: 'up', model: 'claude-x', created: 5 },
  { type: 'text-start', blockId: 't' },
  { type: 'text-delta', blockId: 't', text: 'Hi "there"' },
  { type: 'text-end', blockId: 't' },
  { type: 'tool-call-start', blockId: 'toolu_9', id: 'toolu_9', name: 'lookup' },
  { type: 'tool-call-delta', blockId: 'toolu_9', argumentsDelta: '{"q":' },
  { type: 'tool-call-delta', blockId: 'toolu_9', argumentsDelta: '1}' },
  { type: 'tool-call-end', blockId: 'toolu_9' },
  { type: 'tool-call-start', blockId: 'toolu_10', id: 'toolu_10', name: 'lookup' },
  { type: 'tool-call-end', blockId: 'toolu_10' },
  { type: 'finish', reason: 'tool-calls', rawReason: 'tool_use' },
];
const USAGE = {
  inputTokens: 10,
  cacheReadTokens: 5,
  cacheWriteTokens: 2,
  cacheWrite1hTokens: 0,
  outputTokens: 7,
  reasoningTokens: 0,
};

function frames(includeUsage: boolean): unknown[] {
  const encoder = new OpenAIChatStreamEncoder({ id: 'chatcmpl-1', model: 'alpha-sonnet-5' }, includeUsage, 99);
  const text = EVENTS.map((event) => encoder.encode(event)).join('') + encoder.finish(USAGE);
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((frame) => {
      expect(frame.startsWith('data: ')).toBe(true);
      const payload = frame.slice('data: '.length);
      return payload === '[DONE]' ? payload : JSON.parse(payload);
    });
}

describe('OpenAIChatStreamEncoder', () => {
  it('writes the role chunk first, tool calls indexed per response, finish, usage, [DONE]', () => {
    const chunks = frames(true) as any[];
    expect(chunks[chunks.length - 1]).toBe('[DONE]');
    expect(chunks[0]).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 99,
      model: 'alpha-sonnet-5',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      usage: null,
    });
    expect(chunks[1].choices[0].delta).toEqual({ content: 'Hi "there"' });
    expect(chunks[2].choices[0].delta.tool_calls).toEqual([
      { index: 0, id: 'toolu_9', type: 'function', function: { name: 'lookup', arguments: '' } },
    ]);
    expect(chunks[3].choices[0].delta.tool_calls).toEqual([{ index: 0, function: { arguments: '{"q":' } }]);
    expect(chunks[5].choices[0].delta.tool_calls[0]).toMatchObject({ index: 1, id: 'toolu_10' });
    expect(chunks[6].choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'tool_calls' });
    expect(chunks[7]).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 17,
        completion_tokens: 7,
        total_tokens: 24,
        prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 2 },
      },
    });
    expect(chunks).toHaveLength(9);
  });

  it('leaves usage out entirely when the client did not ask for it', () => {
    const chunks = frames(false) as any[];
    expect(chunks).toHaveLength(8);
    expect(chunks.slice(0, -1).every((chunk) => !('usage' in chunk))).toBe(true);
  });

  it('renders a mid-stream failure as an error data line the SDKs raise, then [DONE]', () => {
    const encoder = new OpenAIChatStreamEncoder({ id: 'chatcmpl-1', model: 'm' }, false);
    const text = encoder.error(new GatewayError('upstream_timeout', 'The model provider did not answer in time.'));
    expect(text).toBe(
      'data: {"error":{"message":"The model provider did not answer in time.","type":"server_error","param":null,"code":"upstream_timeout"}}\n\ndata: [DONE]\n\n',
    );
  });
});

describe('OpenAIChatStreamEncoder: several choices', () => {
  it('each choice opens with its role, carries its index, tool calls and finish, and its tokens', () => {
    const encoder = new OpenAIChatStreamEncoder({ id: 'chatcmpl-1', model: 'beta-5.4' }, false, 99);
    const events: CanonicalEvent[] = [
      { type: 'response-start', id: 'x', model: 'm', created: 1 },
      { type: 'text-start', blockId: 'a' },
      { type: 'text-delta', blockId: 'a', text: 'Hi', logprobs: [{ token: 'Hi', logprob: -1, top: [] }] },
      { type: 'finish', reason: 'stop', rawReason: 'stop' },
      { type: 'tool-call-start', blockId: 'b', id: 'call_1', name: 'f', choice: 1 },
      { type: 'tool-call-delta', blockId: 'b', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool-calls', rawReason: 'tool_calls', choice: 1 },
    ];
    const choices = events
      .map((event) => encoder.encode(event))
      .join('')
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => (JSON.parse(frame.slice('data: '.length)) as { choices: unknown[] }).choices[0]);
    expect(choices).toEqual([
      { index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null },
      {
        index: 0,
        delta: { content: 'Hi' },
        logprobs: { content: [{ token: 'Hi', logprob: -1, bytes: [72, 105], top_logprobs: [] }], refusal: null },
        finish_reason: null,
      },
      { index: 0, delta: {}, finish_reason: 'stop' },
      { index: 1, delta: { role: 'assistant', content: '' }, finish_reason: null },
      {
        index: 1,
        delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] },
        finish_reason: null,
      },
      { index: 1, delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, finish_reason: null },
      { index: 1, delta: {}, finish_reason: 'tool_calls' },
    ]);
  });
});

describe('OpenAIChatStreamEncoder.compact', () => {
  it('places a citation in text compacted while it streamed exactly as in text that never was', () => {
    const encode = (compactEvery: number): string => {
      const encoder = new OpenAIChatStreamEncoder({ id: 'chatcmpl-1', model: 'alpha-sonnet-5' }, false, 99);
      let out = encoder.encode({ type: 'response-start', id: 'up', model: 'm', created: 5 });
      out += encoder.encode({ type: 'text-start', blockId: 't' });
      for (let i = 0; i < 12; i++) {
        out += encoder.encode({ type: 'text-delta', blockId: 't', text: ` sentence number ${i} of the answer.` });
        if (i % compactEvery === 0) encoder.compact();
      }
      const citation = { url: 'https://example.com/a', title: 'A', citedText: ' sentence number 7 of the answer.' };
      out += encoder.encode({ type: 'text-citation', blockId: 't', citation });
      return out + encoder.encode({ type: 'text-end', blockId: 't' });
    };
    const compacted = encode(3);
    expect(compacted).toBe(encode(1000));
    expect(compacted).toContain('"start_index":231,"end_index":264');
  });
});
