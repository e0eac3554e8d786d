import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import { promptSideUsage, type CanonicalUsage } from '../../canonical/usage.js';
import type { AnthropicMessage, AnthropicUsage } from '../../wire/anthropic-messages-wire.js';

export interface AnthropicMappingOptions {
  /** Unix seconds for `response-start`: Anthropic replies carry no creation time. */
  created: number;
  /** The JSON-mode tool, whose call is the reply's text (see `anthropic-json-mode.ts`). */
  jsonToolName?: string | undefined;
}

/** Anthropic `stop_reason` → unified finish reason (docs/protocols/translation.md#stop-reasons-and-finish-reasons). */
const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop-sequence',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool-calls',
  pause_turn: 'pause',
  refusal: 'content-filter',
};

/**
 * The finish event. A reply whose only tool call was the JSON-mode tool ended, from the client's view, with its
 * text: it is reported as `end_turn`, since no tool call reaches the client.
 */
export function anthropicFinishEvent(
  stopReason: string | null,
  stopSequence: string | null | undefined,
  answeredByJsonTool: boolean,
): Extract<CanonicalEvent, { type: 'finish' }> {
  if (stopReason === 'tool_use' && answeredByJsonTool) return { type: 'finish', reason: 'stop', rawReason: 'end_turn' };
  const reason: FinishReason = stopReason === null ? 'stop' : (FINISH_REASONS[stopReason] ?? 'other');
  const event: Extract<CanonicalEvent, { type: 'finish' }> = { type: 'finish', reason, rawReason: stopReason };
  if (stopReason === 'stop_sequence' && typeof stopSequence === 'string') event.stopSequence = stopSequence;
  return event;
}

/**
 * Anthropic usage → canonical usage. Anthropic's `input_tokens` already excludes cache reads and writes, which is
 * the canonical convention; thinking tokens are inside `output_tokens` and reported apart only by newer APIs.
 * `cache_creation` splits the writes by lifetime (a 1-hour write costs more); `message_delta` never carries it, so
 * a stream keeps `message_start`'s split.
 */
export function mapAnthropicUsage(usage: Partial<AnthropicUsage>): CanonicalUsage {
  const split = usage.cache_creation;
  const write5m = split?.ephemeral_5m_input_tokens ?? 0;
  const write1h = split?.ephemeral_1h_input_tokens ?? 0;
  const cacheWriteTokens = usage.cache_creation_input_tokens ?? write5m + write1h;
  return {
    inputTokens: usage.input_tokens ?? 0,
    cacheReadTokens: usage.cache_read_input_tokens ?? 0,
    cacheWriteTokens,
    cacheWrite1hTokens: Math.min(write1h, cacheWriteTokens),
    outputTokens: usage.output_tokens ?? 0,
    reasoningTokens: usage.output_tokens_details?.thinking_tokens ?? 0,
    raw: usage,
  };
}

/** Block ids follow Anthropic's content index, so stream and non-stream replies name blocks alike. */
export function anthropicBlockId(index: number): string {
  return `b${index}`;
}

/**
 * A whole Message as the canonical event sequence its stream would have produced (see AnthropicStreamMapper):
 * empty text blocks and block types the gateway does not relay (server tools, citations) are left out.
 */
export function mapAnthropicMessage(message: AnthropicMessage, options: AnthropicMappingOptions): CanonicalEvent[] {
  const events: CanonicalEvent[] = [
    {
      type: 'response-start',
      id: message.id,
      model: message.model,
      created: options.created,
      inputUsage: promptSideUsage(mapAnthropicUsage(message.usage ?? {})),
    },
  ];
  let jsonReplies = 0;
  let toolCalls = 0;
  message.content.forEach((block, index) => {
    const blockId = anthropicBlockId(index);
    switch (block.type) {
      case 'text':
        if (block.text !== '')
          events.push(
            { type: 'text-start', blockId },
            { type: 'text-delta', blockId, text: block.text },
            { type: 'text-end', blockId },
          );
        return;
      case 'thinking':
        events.push({ type: 'reasoning-start', blockId });
        if (block.thinking !== '') events.push({ type: 'reasoning-delta', blockId, text: block.thinking });
        if (typeof block.signature === 'string' && block.signature !== '')
          events.push({ type: 'reasoning-signature', blockId, signature: block.signature });
        events.push({ type: 'reasoning-end', blockId });
        return;
      case 'redacted_thinking':
        events.push({ type: 'reasoning-start', blockId, redactedData: block.data }, { type: 'reasoning-end', blockId });
        return;
      case 'tool_use': {
        const argumentsJson = JSON.stringify(block.input ?? {});
        if (block.name === options.jsonToolName) {
          jsonReplies += 1;
          events.push(
            { type: 'text-start', blockId },
            { type: 'text-delta', blockId, text: argumentsJson },
            { type: 'text-end', blockId },
          );
        } else {
          toolCalls += 1;
          events.push(
            { type: 'tool-call-start', blockId, id: block.id, name: block.name },
            { type: 'tool-call-delta', blockId, argumentsDelta: argumentsJson },
            { type: 'tool-call-end', blockId },
          );
        }
        return;
      }
      default:
        return;
    }
  });
  events.push(anthropicFinishEvent(message.stop_reason, message.stop_sequence, jsonReplies > 0 && toolCalls === 0));
  events.push({ type: 'usage', usage: mapAnthropicUsage(message.usage ?? {}) });
  return events;
}
