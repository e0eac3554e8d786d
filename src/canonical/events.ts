import type { GatewayError } from './errors.js';
import type { Citation, ServerToolResultBlock } from './server-tools.js';
import type { CanonicalUsage } from './usage.js';

/** Unified finish reasons; the vendor's own value travels beside it as `rawReason`. */
export type FinishReason = 'stop' | 'stop-sequence' | 'length' | 'tool-calls' | 'content-filter' | 'pause' | 'other';

/** One output token's log probability, with the most likely alternatives at that position when asked for. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** The token's UTF-8 bytes, when the vendor gives them (a token may be part of a character). */
  bytes?: number[];
  top: Array<{ token: string; logprob: number; bytes?: number[] }>;
}

/**
 * The canonical event stream every provider produces and every client protocol encodes. Blocks are named
 * by id, never by position, so interleaved blocks of one reply cannot be confused.
 */
export type CanonicalEvent =
  /**
   * A reply with several choices (`CanonicalRequest.choices`) names a block's choice on its start event and each
   * choice's own `finish`; `choice` absent is the first (0). Text deltas carry their tokens' log probabilities when
   * the request asked for them.
   *
   * `inputUsage`: the prompt-side counts (input and cache fields; output 0), when the vendor tells them before the
   * reply (Anthropic's `message_start`, Gemini's first chunk). A client protocol that shows them at the start
   * (Anthropic's `message_start.usage`) reads them here; billing still reads the `usage` event.
   */
  | { type: 'response-start'; id: string; model: string; created: number; inputUsage?: CanonicalUsage }
  | { type: 'text-start'; blockId: string; choice?: number }
  | { type: 'text-delta'; blockId: string; text: string; logprobs?: TokenLogprob[] }
  | { type: 'text-end'; blockId: string }
  /** A source the open text block cites (Anthropic's `citations_delta`, OpenAI's `url_citation`, Gemini's grounding). */
  | { type: 'text-citation'; blockId: string; citation: Citation }
  | { type: 'reasoning-start'; blockId: string; redactedData?: string; choice?: number }
  | { type: 'reasoning-delta'; blockId: string; text: string }
  | { type: 'reasoning-signature'; blockId: string; signature: string }
  | { type: 'reasoning-end'; blockId: string }
  | { type: 'tool-call-start'; blockId: string; id: string; name: string; choice?: number }
  | { type: 'tool-call-delta'; blockId: string; argumentsDelta: string }
  | { type: 'tool-call-end'; blockId: string }
  /** The vendor called one of its own tools (whole: the client neither runs nor streams it). */
  | { type: 'server-tool-call'; blockId: string; id: string; name: string; input: unknown }
  /** What the vendor's tool returned, whole. */
  | { type: 'server-tool-result'; blockId: string; result: ServerToolResultBlock }
  | { type: 'usage'; usage: CanonicalUsage }
  | { type: 'finish'; reason: FinishReason; rawReason: string | null; stopSequence?: string; choice?: number }
  | { type: 'error'; error: GatewayError };

export type CanonicalEventType = CanonicalEvent['type'];
