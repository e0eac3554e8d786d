/**
 * Canonical token usage. `inputTokens` excludes cache reads and writes (Anthropic's convention), so that
 * every field prices independently; `reasoningTokens` is a part of `outputTokens`, not beside it.
 */
export interface CanonicalUsage {
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** The vendor's own usage object, kept for audit. */
  raw?: unknown;
}

export function emptyUsage(): CanonicalUsage {
  return { inputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0 };
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
  };
}
