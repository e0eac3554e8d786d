import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import { promptSideUsage, type CanonicalUsage } from '../../canonical/usage.js';
import type {
  AnthropicMessage,
  AnthropicServerToolResultBlock,
  AnthropicUsage,
} from '../../wire/anthropic-messages-wire.js';
import { anthropicCitedSource, anthropicWebSearchResults } from '../../wire/anthropic-server-blocks.js';

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
    ...serverToolUsage(usage.server_tool_use),
    raw: usage,
  };
}

/** `server_tool_use` counts (web searches and fetches the vendor ran), when it reports any. */
function serverToolUsage(used: Record<string, number> | null | undefined): Pick<CanonicalUsage, 'serverToolUse'> {
  if (used === undefined || used === null) return {};
  return {
    serverToolUse: { webSearchRequests: used.web_search_requests ?? 0, webFetchRequests: used.web_fetch_requests ?? 0 },
  };
}

/** A server tool's whole result block as the canonical event: Anthropic's object kept for a later replay. */
export function serverToolResultEvent(blockId: string, block: AnthropicServerToolResultBlock): CanonicalEvent {
  const searchResults = anthropicWebSearchResults(block.type, block.content);
  return {
    type: 'server-tool-result',
    blockId,
    result: {
      type: 'server-tool-result',
      toolCallId: block.tool_use_id,
      resultType: block.type,
      ...(searchResults === undefined ? {} : { searchResults }),
      anthropicBlock: block,
    },
  };
}

/** Anthropic's `citations` of a text block, as canonical events (none for `null`). */
export function citationEvents(blockId: string, citations: unknown[] | null | undefined): CanonicalEvent[] {
  return (citations ?? []).map((citation) => ({
    type: 'text-citation',
    blockId,
    citation: anthropicCitedSource(citation as Record<string, unknown>),
  }));
}

/** Block ids follow Anthropic's content index, so stream and non-stream replies name blocks alike. */
export function anthropicBlockId(index: number): string {
  return `b${index}`;
}

/**
 * A whole Message as the canonical event sequence its stream would have produced (see AnthropicStreamMapper):
 * empty text blocks and block types the gateway does not know are left out.
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
            ...citationEvents(blockId, block.citations),
            { type: 'text-end', blockId },
          );
        return;
      case 'server_tool_use':
        events.push({ type: 'server-tool-call', blockId, id: block.id, name: block.name, input: block.input ?? {} });
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
        if (typeof block.tool_use_id === 'string') events.push(serverToolResultEvent(blockId, block));
        return;
    }
  });
  events.push(anthropicFinishEvent(message.stop_reason, message.stop_sequence, jsonReplies > 0 && toolCalls === 0));
  events.push({ type: 'usage', usage: mapAnthropicUsage(message.usage ?? {}) });
  return events;
}
