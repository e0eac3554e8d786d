import type { CanonicalResponse } from '../../canonical/accumulate.js';
import type { FinishReason } from '../../canonical/events.js';
import { tagSignature } from '../../canonical/reasoning-signature.js';
import type { VendorName } from '../../canonical/request.js';
import { cacheWrite5mTokens, type CanonicalUsage } from '../../canonical/usage.js';
import { costFields, type CostFields } from '../shared/cost-fields.js';
import type {
  AnthropicDeltaUsage,
  AnthropicMessage,
  AnthropicResponseBlock,
  AnthropicStopReason,
  AnthropicToolUseBlock,
  AnthropicUsage,
} from '../../wire/anthropic-messages-wire.js';
import { encodeCitations, encodeServerToolCall, encodeServerToolResult } from './anthropic-encode-server-blocks.js';

export interface AnthropicResponseContext {
  /** The id the client sees (`msg_…`). */
  id: string;
  /** The public model id the client asked for. */
  model: string;
  /** Which vendor produced the reply: reasoning signatures are tagged with it. */
  vendor: VendorName;
  /** The gateway's count of the prompt, for a stream's `message_start` when the vendor tells none at the start. */
  promptTokens?: number | undefined;
}

const STOP_REASONS: Readonly<Record<FinishReason, AnthropicStopReason>> = {
  stop: 'end_turn',
  'stop-sequence': 'stop_sequence',
  length: 'max_tokens',
  'tool-calls': 'tool_use',
  'content-filter': 'refusal',
  pause: 'pause_turn',
  other: 'end_turn',
};

export function encodeAnthropicStopReason(reason: FinishReason | null, hasToolUse: boolean): AnthropicStopReason {
  // A reply that holds a tool_use block must say tool_use, whatever the vendor said
  // (docs/protocols/translation.md#stop-reasons-and-finish-reasons).
  if (hasToolUse && (reason === null || reason === 'stop' || reason === 'tool-calls' || reason === 'other'))
    return 'tool_use';
  return reason === null ? 'end_turn' : STOP_REASONS[reason];
}

/**
 * `Usage` as the current SDK declares it: every field present (null where the gateway has nothing to say), so a
 * client that reads `usage.server_tool_use` or `usage.output_tokens_details` finds what Anthropic would send.
 * `cache_creation` splits the cache writes by lifetime, as Anthropic always sends it (zeros without writes).
 */
export function encodeAnthropicUsage(usage: CanonicalUsage, costNano?: bigint): AnthropicUsage & Partial<CostFields> {
  const counts = encodeAnthropicDeltaUsage(usage, costNano);
  return {
    ...counts,
    input_tokens: usage.inputTokens,
    cache_creation: {
      ephemeral_5m_input_tokens: cacheWrite5mTokens(usage),
      ephemeral_1h_input_tokens: usage.cacheWrite1hTokens,
    },
    inference_geo: null,
    service_tier: 'standard',
    speed: null,
  };
}

/** `MessageDeltaUsage`: the cumulative counts of a stream's `message_delta`. */
export function encodeAnthropicDeltaUsage(
  usage: CanonicalUsage,
  costNano?: bigint,
): AnthropicDeltaUsage & Partial<CostFields> {
  return {
    ...(costNano === undefined ? {} : costFields(costNano)),
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
    output_tokens: usage.outputTokens,
    output_tokens_details: thinkingDetails(usage),
    server_tool_use: serverToolUsage(usage),
  };
}

function serverToolUsage(usage: CanonicalUsage): Record<string, number> | null {
  const used = usage.serverToolUse;
  return used === undefined
    ? null
    : { web_search_requests: used.webSearchRequests, web_fetch_requests: used.webFetchRequests };
}

function thinkingDetails(usage: CanonicalUsage): { thinking_tokens: number } | null {
  return usage.reasoningTokens > 0 ? { thinking_tokens: usage.reasoningTokens } : null;
}

/** A `tool_use` block: Anthropic sends who made the call (`caller`), and for a translated call that is the model. */
export function encodeToolUse(id: string, name: string, input: unknown): AnthropicToolUseBlock {
  return { type: 'tool_use', id: anthropicToolId(id), name, input, caller: { type: 'direct' } };
}

/** The top-level fields of `Message` beyond content, usage and stop reason: the gateway has none of them to give. */
export const MESSAGE_NULL_FIELDS = { stop_details: null, container: null, diagnostics: null } as const;

/** Tool arguments as the object Anthropic clients expect; text that is not a JSON object is kept under `_raw`. */
export function toolInput(argumentsJson: string): unknown {
  if (argumentsJson.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(argumentsJson);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { _raw: argumentsJson };
  } catch {
    return { _raw: argumentsJson };
  }
}

/**
 * Ids from other vendors may hold characters Anthropic clients refuse to send back
 * (docs/protocols/translation.md#tool-ids-anthropic-refuses).
 */
export function anthropicToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/** A whole canonical reply as an Anthropic Message. Empty text blocks are left out: clients echo them back. */
export function encodeAnthropicResponse(
  response: CanonicalResponse,
  context: AnthropicResponseContext,
  costNano?: bigint,
): AnthropicMessage {
  const content: AnthropicResponseBlock[] = [];
  let hasToolUse = false;
  for (const block of response.content) {
    if (block.type === 'text') {
      if (block.text !== '')
        content.push({ type: 'text', text: block.text, citations: encodeCitations(block.citations) });
    } else if (block.type === 'server-tool-call') {
      content.push(encodeServerToolCall(block));
    } else if (block.type === 'server-tool-result') {
      content.push(encodeServerToolResult(block));
    } else if (block.type === 'reasoning') {
      if (block.redactedData !== undefined) content.push({ type: 'redacted_thinking', data: block.redactedData });
      else
        content.push({
          type: 'thinking',
          thinking: block.text,
          signature: tagSignature(context.vendor, block.signature ?? ''),
        });
    } else {
      hasToolUse = true;
      content.push(encodeToolUse(block.id, block.name, toolInput(block.argumentsJson)));
    }
  }
  return {
    id: context.id,
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: encodeAnthropicStopReason(response.finishReason, hasToolUse),
    stop_sequence: response.stopSequence,
    ...MESSAGE_NULL_FIELDS,
    usage: encodeAnthropicUsage(response.usage, costNano),
  };
}
