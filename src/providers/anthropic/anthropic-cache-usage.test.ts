import { describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../../canonical/accumulate.js';
import { SseDecoder } from '../../streaming/sse-decoder.js';
import { mapAnthropicUsage } from './anthropic-map-response.js';
import { AnthropicStreamMapper } from './anthropic-map-stream.js';

/** Anthropic's usage for a turn that wrote 2,000 tokens for 5 minutes and 1,000 for an hour. */
const START_USAGE = {
  input_tokens: 500,
  cache_creation_input_tokens: 3_000,
  cache_read_input_tokens: 10_000,
  cache_creation: { ephemeral_5m_input_tokens: 2_000, ephemeral_1h_input_tokens: 1_000 },
  output_tokens: 1,
};
const SPLIT = { inputTokens: 500, cacheReadTokens: 10_000, cacheWriteTokens: 3_000, cacheWrite1hTokens: 1_000 };

describe('Anthropic cache writes by lifetime', () => {
  it('maps cache_creation into the 1-hour part of the cache writes', () => {
    expect(mapAnthropicUsage(START_USAGE)).toMatchObject({ ...SPLIT, outputTokens: 1 });
    // Without the split every write is a 5-minute one; with only the split, the writes are its sum.
    expect(mapAnthropicUsage({ ...START_USAGE, cache_creation: null })).toMatchObject({ cacheWrite1hTokens: 0 });
    const { cache_creation_input_tokens: _total, ...splitOnly } = START_USAGE;
    expect(mapAnthropicUsage(splitOnly)).toMatchObject({ cacheWriteTokens: 3_000, cacheWrite1hTokens: 1_000 });
  });

  it("keeps message_start's split in a stream, though message_delta carries none", () => {
    const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    const text =
      frame('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-5',
          content: [],
          usage: START_USAGE,
        },
      }) +
      frame('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }) +
      frame('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'Hi' },
      }) +
      frame('content_block_stop', { type: 'content_block_stop', index: 0 }) +
      frame('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: {
          input_tokens: 500,
          cache_creation_input_tokens: 3_000,
          cache_read_input_tokens: 10_000,
          output_tokens: 300,
        },
      }) +
      frame('message_stop', { type: 'message_stop' });
    const decoder = new SseDecoder();
    const mapper = new AnthropicStreamMapper('Anthropic', { created: 1 });
    const events = [...decoder.push(new TextEncoder().encode(text)), ...decoder.end()].flatMap((event) =>
      mapper.map(event),
    );
    events.push(...mapper.end());
    const accumulator = new ResponseAccumulator();
    for (const event of events) accumulator.apply(event);
    expect(accumulator.response.inputUsage).toMatchObject(SPLIT);
    expect(accumulator.response.usage).toMatchObject({ ...SPLIT, outputTokens: 300 });
  });
});
