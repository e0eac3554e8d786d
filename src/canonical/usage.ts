import type { ServerToolUsage } from './server-tools.js';

/**
 * Canonical token usage. `inputTokens` excludes cache reads and writes (Anthropic's convention), so that
 * every field prices independently; `reasoningTokens` is a part of `outputTokens`, not beside it, and
 * `cacheWrite1hTokens` is a part of `cacheWriteTokens` (so totals read the same with or without the split).
 */
export interface CanonicalUsage {
  inputTokens: number;
  cacheReadTokens: number;
  /** All prompt tokens written to a cache, whatever their lifetime. */
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written with a 1-hour lifetime (priced above a 5-minute write). */
  cacheWrite1hTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** Uses of the vendor's own tools (web searches…), billed per use beside the tokens. */
  serverToolUse?: ServerToolUsage;
  /** The vendor's own usage object, kept for audit. */
  raw?: unknown;
}

export function emptyUsage(): CanonicalUsage {
  return {
    inputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
  };
}

/** All prompt-side tokens, cached or not: what OpenAI calls `prompt_tokens`. */
export function totalInputTokens(usage: CanonicalUsage): number {
  return usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}

/** The prompt side of a usage (input and cache counts), for `response-start.inputUsage`: no output, no raw object. */
export function promptSideUsage(usage: CanonicalUsage): CanonicalUsage {
  return {
    ...emptyUsage(),
    inputTokens: usage.inputTokens,
    cacheReadTokens: usage.cacheReadTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
    cacheWrite1hTokens: usage.cacheWrite1hTokens,
  };
}

/** Cache writes with a 5-minute lifetime: the writes that are not 1-hour writes. */
export function cacheWrite5mTokens(usage: Pick<CanonicalUsage, 'cacheWriteTokens' | 'cacheWrite1hTokens'>): number {
  return Math.max(0, usage.cacheWriteTokens - usage.cacheWrite1hTokens);
}
