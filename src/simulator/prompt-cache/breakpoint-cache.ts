/**
 * Explicit caching with breakpoints, the way Anthropic does it. The prefix up to and including each breakpoint is
 * cached for the breakpoint's lifetime when it holds at least the model's minimum of tokens. A request reads the
 * longest cached prefix that ends at one of its breakpoints or at one of the 19 units before each (Anthropic's
 * 20-block lookback), and writes the rest up to its last breakpoint: each written segment counts as a 5-minute
 * or a 1-hour write by the lifetime of the breakpoint it ends at. A read restarts the entry's lifetime.
 */
import type { PromptCacheStore } from './cache-store.js';
import { prefixesOf, type CacheTtl, type CacheUnit } from './cache-units.js';
import type { CacheCounts } from './cache-counts.js';

/** Positions checked at each breakpoint: the breakpoint itself and the 19 before it. */
export const LOOKBACK_UNITS = 20;

const LIFETIME_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

export interface BreakpointCachePolicy {
  /** Smallest prefix (in tokens) a breakpoint caches. */
  minimumTokens: number;
}

export function breakpointCache(
  store: PromptCacheStore,
  scope: string,
  units: readonly CacheUnit[],
  total: number,
  policy: BreakpointCachePolicy,
): CacheCounts {
  const prefixes = prefixesOf(units);
  const breakpoints = units.flatMap((unit, index) => (unit.breakpoint === undefined ? [] : [index]));
  const keyAt = (index: number): string => `${scope}\u0000${prefixes[index]?.hash ?? ''}`;

  let readAt = -1;
  let read = 0;
  for (const breakpoint of breakpoints) {
    for (let index = breakpoint; index > breakpoint - LOOKBACK_UNITS && index > readAt; index--) {
      const tokens = store.peek(keyAt(index));
      if (tokens === undefined) continue;
      readAt = index;
      read = Math.min(tokens, total);
      break;
    }
  }
  if (readAt >= 0) {
    store.refresh(keyAt(readAt));
    for (const breakpoint of breakpoints) if (breakpoint < readAt) store.refresh(keyAt(breakpoint));
  }

  let covered = readAt >= 0 ? (prefixes[readAt]?.tokens ?? 0) : 0;
  let write = 0;
  let write1h = 0;
  for (const breakpoint of breakpoints) {
    const unit = units[breakpoint];
    const prefix = prefixes[breakpoint];
    if (breakpoint <= readAt || unit?.breakpoint === undefined || prefix === undefined) continue;
    if (prefix.tokens < policy.minimumTokens) continue;
    const segment = Math.max(0, prefix.tokens - covered);
    store.write(keyAt(breakpoint), prefix.tokens, LIFETIME_MS[unit.breakpoint]);
    write += segment;
    if (unit.breakpoint === '1h') write1h += segment;
    covered = prefix.tokens;
  }
  // Never more than the prompt: the units' counts may differ from an earlier request's by a token or two.
  write = Math.min(write, total - read);
  write1h = Math.min(write1h, write);
  return { total, read, write, write1h, uncached: total - read - write };
}
