import { totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';

/** The limits a vendor's usage must fit to be billed as reported. */
export interface UsageBounds {
  /** The most output the request may have: the client's limit, or the model's. */
  maxOutputTokens: number;
  /** The model's context window: no prompt is larger. */
  contextWindow: number;
}

const COUNT_FIELDS = [
  'inputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  'outputTokens',
  'reasoningTokens',
] as const satisfies readonly (keyof CanonicalUsage)[];

/**
 * Why a vendor's usage cannot be billed as reported, or undefined when it can: a count that is missing, negative or
 * not a whole number, more output than the request's limit allows, or a prompt larger than the model's context
 * window. Such usage is settled on the gateway's own count instead (the vendor's figure is kept for audit).
 */
export function implausibleUsage(usage: CanonicalUsage, bounds: UsageBounds): string | undefined {
  for (const field of COUNT_FIELDS) {
    const count: unknown = usage[field];
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0)
      return `${field} is ${String(count)}, not a count`;
  }
  if (usage.cacheWrite1hTokens > usage.cacheWriteTokens) return 'cacheWrite1hTokens exceeds cacheWriteTokens';
  if (usage.outputTokens > bounds.maxOutputTokens)
    return `outputTokens ${usage.outputTokens} exceeds the request's limit of ${bounds.maxOutputTokens}`;
  if (totalInputTokens(usage) > bounds.contextWindow)
    return `${totalInputTokens(usage)} prompt tokens exceed the context window of ${bounds.contextWindow}`;
  return undefined;
}
