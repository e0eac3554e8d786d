import type { GatewayError } from './errors.js';
import type { Citation, ServerToolResultBlock } from './server-tools.js';
import type { CanonicalUsage } from './usage.js';

/** Unified finish reasons; the vendor's own value travels beside it as `rawReason`. */
export type FinishReason = 'stop' | 'stop-sequence' | 'length' | 'tool-calls' | 'content-filter' | 'pause' | 'other';

/**
 * The canonical event stream every provider produces and every client protocol encodes. Blocks are named
 * by id, never by position, so interleaved blocks of one reply cannot be confused.
 */
export type CanonicalEvent =
  /**
   * `inputUsage`: the prompt-side counts (input and cache fields; output 0), when the vendor tells them before the
   * reply (Anthropic's `message_start`, Gemini's first chunk). A client protocol that shows them at the start
   * (Anthropic's `message_start.usage`) reads them here; billing still reads the `usage` event.
   */
  | { type: 'response-start'; id: string; model: string; created: number; inputUsage?: CanonicalUsage }
  | { type: 'text-start'; blockId: string }
  | { type: 'text-delta'; blockId: string; text: string }
  | { type: 'text-end'; blockId: string }
  /** A source the open text block cites (Anthropic's `citations_delta`, OpenAI's `url_citation`, Gemini's grounding). */
  | { type: 'text-citation'; blockId: string; citation: Citation }
  | { type: 'reasoning-start'; blockId: string; redactedData?: string }
  | { type: 'reasoning-delta'; blockId: string; text: string }
  | { type: 'reasoning-signature'; blockId: string; signature: string }
  | { type: 'reasoning-end'; blockId: string }
  | { type: 'tool-call-start'; blockId: string; id: string; name: string }
  | { type: 'tool-call-delta'; blockId: string; argumentsDelta: string }
  | { type: 'tool-call-end'; blockId: string }
  /** The vendor called one of its own tools (whole: the client neither runs nor streams it). */
  | { type: 'server-tool-call'; blockId: string; id: string; name: string; input: unknown }
  /** What the vendor's tool returned, whole. */
  | { type: 'server-tool-result'; blockId: string; result: ServerToolResultBlock }
  | { type: 'usage'; usage: CanonicalUsage }
  | { type: 'finish'; reason: FinishReason; rawReason: string | null; stopSequence?: string }
  | { type: 'error'; error: GatewayError };

export type CanonicalEventType = CanonicalEvent['type'];
