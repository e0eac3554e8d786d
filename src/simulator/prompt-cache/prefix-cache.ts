/**
 * Automatic caching by prefix, the way OpenAI, Gemini and DeepSeek do it: every prompt of at least the minimum
 * length is cached, prefix by prefix (at each unit boundary), and a later prompt reads the longest cached prefix
 * it starts with, rounded down to the vendor's granularity: OpenAI counts hits from 1,024 tokens in steps of 128,
 * DeepSeek in units of 64, Gemini token by token. Nothing is billed as a write. Each request restarts the lifetime
 * of every prefix it holds.
 */
import type { PromptCacheStore } from './cache-store.js';
import { prefixesOf, type CacheUnit } from './cache-units.js';
import type { CacheCounts } from './cache-counts.js';

export interface PrefixCachePolicy {
  /** Smallest prompt cached, and smallest hit reported. */
  minimumTokens: number;
  /** Hits above the minimum grow in steps of this many tokens. */
  stepTokens: number;
  /** How long a prefix stays cached after the last request that held it. */
  lifetimeMs: number;
}

/** The hit reported for `matched` tokens of cached prefix. */
export function roundedHit(matched: number, policy: PrefixCachePolicy): number {
  if (matched < policy.minimumTokens) return 0;
  const step = Math.max(1, policy.stepTokens);
  return policy.minimumTokens + Math.floor((matched - policy.minimumTokens) / step) * step;
}

export function prefixCache(
  store: PromptCacheStore,
  scope: string,
  units: readonly CacheUnit[],
  total: number,
  policy: PrefixCachePolicy,
): CacheCounts {
  const prefixes = prefixesOf(units);
  const keyAt = (index: number): string => `${scope}\u0000${prefixes[index]?.hash ?? ''}`;
  let matched = 0;
  for (let index = prefixes.length - 1; index >= 0; index--) {
    const tokens = store.peek(keyAt(index));
    if (tokens === undefined) continue;
    matched = tokens;
    break;
  }
  const read = Math.min(roundedHit(matched, policy), total);
  if (total >= policy.minimumTokens) {
    prefixes.forEach((prefix, index) => {
      if (prefix.tokens >= policy.minimumTokens) store.write(keyAt(index), prefix.tokens, policy.lifetimeMs);
    });
  }
  return { total, read, write: 0, write1h: 0, uncached: total - read };
}
