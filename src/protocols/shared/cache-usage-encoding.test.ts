/**
 * Every client protocol reports cached prompt tokens in its own usage fields, in whole replies and in streams:
 * OpenAI chat and Responses the reads as `cached_tokens`, Anthropic reads, writes and the writes' split by lifetime,
 * Gemini the reads as `cachedContentTokenCount`.
 */
import { describe, expect, it } from 'vitest';
import type { CanonicalEvent } from '../../canonical/events.js';
import { emptyUsage } from '../../canonical/usage.js';
import { encodeAnthropicUsage } from '../anthropic-messages/anthropic-encode-response.js';
import { AnthropicStreamEncoder } from '../anthropic-messages/anthropic-encode-stream.js';
import { encodeGeminiUsage } from '../gemini-generate/gemini-encode-response.js';
import { encodeOpenAIUsage } from '../openai-chat/openai-encode-usage.js';
import { encodeResponsesUsage } from '../openai-responses/responses-encode-response.js';

const USAGE = {
  ...emptyUsage(),
  inputTokens: 500,
  cacheReadTokens: 10_000,
  cacheWriteTokens: 3_000,
  cacheWrite1hTokens: 1_000,
  outputTokens: 300,
};
const PROMPT = 13_500;

describe('cached tokens in each protocol', () => {
  it('Anthropic: reads, all writes, and the writes split into 5-minute and 1-hour ones', () => {
    expect(encodeAnthropicUsage(USAGE, 22_500_000n)).toMatchObject({
      input_tokens: 500,
      cache_read_input_tokens: 10_000,
      cache_creation_input_tokens: 3_000,
      cache_creation: { ephemeral_5m_input_tokens: 2_000, ephemeral_1h_input_tokens: 1_000 },
      output_tokens: 300,
      cost: '0.0225',
      cost_nano_usd: '22500000',
    });
    // Anthropic sends the split always, zeros without writes.
    expect(encodeAnthropicUsage(emptyUsage()).cache_creation).toEqual({
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: 0,
    });
  });

  it('Anthropic stream: message_start carries the split, message_delta the final counts', () => {
    const encoder = new AnthropicStreamEncoder({ id: 'msg_1', model: 'alpha-sonnet-5', vendor: 'anthropic' });
    const start: CanonicalEvent = {
      type: 'response-start',
      id: 'msg_1',
      model: 'claude-sonnet-5',
      created: 1,
      inputUsage: { ...USAGE, outputTokens: 0 },
    };
    const text = encoder.encode(start) + encoder.finish(USAGE, 22_500_000n);
    const frames = text
      .split('\n\n')
      .filter((part) => part.startsWith('event: '))
      .map((part) => JSON.parse(part.split('\n')[1]!.slice(6)));
    expect(frames.find((frame) => frame.type === 'message_start').message.usage).toMatchObject({
      cache_read_input_tokens: 10_000,
      cache_creation_input_tokens: 3_000,
      cache_creation: { ephemeral_5m_input_tokens: 2_000, ephemeral_1h_input_tokens: 1_000 },
    });
    expect(frames.find((frame) => frame.type === 'message_delta').usage).toMatchObject({
      cache_read_input_tokens: 10_000,
      cache_creation_input_tokens: 3_000,
      output_tokens: 300,
      cost_nano_usd: '22500000',
    });
  });

  it('OpenAI chat and Responses: every prompt token in the prompt count, reads as cached_tokens', () => {
    expect(encodeOpenAIUsage(USAGE)).toMatchObject({
      prompt_tokens: PROMPT,
      prompt_tokens_details: { cached_tokens: 10_000, cache_write_tokens: 3_000 },
      total_tokens: PROMPT + 300,
    });
    expect(encodeResponsesUsage(USAGE)).toMatchObject({
      input_tokens: PROMPT,
      input_tokens_details: { cached_tokens: 10_000, cache_write_tokens: 3_000 },
      total_tokens: PROMPT + 300,
    });
  });

  it('Gemini: reads as cachedContentTokenCount inside promptTokenCount', () => {
    expect(encodeGeminiUsage(USAGE)).toMatchObject({
      promptTokenCount: PROMPT,
      cachedContentTokenCount: 10_000,
      totalTokenCount: PROMPT + 300,
    });
  });
});
