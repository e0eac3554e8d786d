/**
 * A prompt as the simulated caches see it: an ordered list of units (a tool, a system block, a message or one of
 * its content blocks, in the vendor's cache order), each with the hash of its exact content and its token count.
 * A prefix is named by chaining the hashes of its units, so two prompts share a cache entry exactly when they share
 * every unit up to it.
 *
 * Token counts come from the simulator's own counter, unit by unit, then the last units are adjusted so the units
 * add up to the prompt count the vendor reports (joined system text, tool arrays and the counter's budget on very
 * long prompts make the sum of parts differ from the whole by a little): the split never changes the total.
 */
import { createHash } from 'node:crypto';

export type CacheTtl = '5m' | '1h';

export interface CacheUnit {
  /** SHA-256 (hex) of the unit's exact content, with what distinguishes its kind and place. */
  hash: string;
  tokens: number;
  /** A cache breakpoint on this unit (Anthropic's `cache_control`), with its lifetime. */
  breakpoint?: CacheTtl;
}

export interface CachePrefix {
  /** Chained hash of units 0..i. */
  hash: string;
  /** Tokens of units 0..i. */
  tokens: number;
}

export function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The prefix ending at each unit: its chained hash and cumulative token count. */
export function prefixesOf(units: readonly CacheUnit[]): CachePrefix[] {
  const prefixes: CachePrefix[] = [];
  let hash = '';
  let tokens = 0;
  for (const unit of units) {
    hash = hashText(`${hash}:${unit.hash}`);
    tokens += unit.tokens;
    prefixes.push({ hash, tokens });
  }
  return prefixes;
}

/**
 * Makes the units add up to `total` (the vendor's prompt count): the difference goes to the last unit, and when
 * that would go below zero, to the ones before it. The units are changed in place.
 */
export function reconcileTokens(units: CacheUnit[], total: number): void {
  let difference = total - units.reduce((sum, unit) => sum + unit.tokens, 0);
  for (let index = units.length - 1; index >= 0 && difference !== 0; index--) {
    const unit = units[index];
    if (unit === undefined) continue;
    const adjusted = Math.max(0, unit.tokens + difference);
    difference -= adjusted - unit.tokens;
    unit.tokens = adjusted;
  }
}

const MEMO_LIMIT = 10_000;
const tokenMemo = new Map<string, number>();

/**
 * `count()` of a unit, remembered by the unit's hash: a conversation resends the same tools, system prompt and
 * earlier turns every turn, and each is counted once. Bounded: the memo starts over when full.
 */
export function memoTokens(hash: string, count: () => number): number {
  const known = tokenMemo.get(hash);
  if (known !== undefined) return known;
  const tokens = count();
  if (tokenMemo.size >= MEMO_LIMIT) tokenMemo.clear();
  tokenMemo.set(hash, tokens);
  return tokens;
}

/**
 * A unit of `kind` whose content is `content` (serialised once here), counted by `count`. `countVariant` names
 * what else the count depends on (not the content, so not the hash): the same block may count differently by
 * where it stands.
 */
export function unitOf(
  kind: string,
  content: unknown,
  count: () => number,
  breakpoint?: CacheTtl,
  countVariant = '',
): CacheUnit {
  const hash = hashText(`${kind}\n${typeof content === 'string' ? content : JSON.stringify(content)}`);
  const tokens = memoTokens(`${hash}${countVariant}`, count);
  return { hash, tokens, ...(breakpoint === undefined ? {} : { breakpoint }) };
}
