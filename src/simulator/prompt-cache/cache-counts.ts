/**
 * How a request's prompt splits into cache reads, writes and uncached tokens, and which source decides it: the
 * `cache-read=` / `cache-write=` directives when the request has any (fixed counts for tests), otherwise the
 * simulator's real cache, unless it is switched off for the simulator or for this request (`prompt-cache=off`).
 */
import type { SimulatorDirectives } from '../fault-directives.js';
import { splitPromptCache, type PromptCacheSplit } from '../prompt-cache.js';
import type { SimulatorExchange } from '../simulator-exchange.js';
import type { PromptCacheStore } from './cache-store.js';

export interface CacheCounts extends PromptCacheSplit {
  /** The part of `write` written with a 1-hour lifetime (Anthropic); the rest is 5-minute writes. */
  write1h: number;
}

/** Whether the request fixes its cache counts by directive (any `cache-…=N` setting, or `prompt-tokens=N`). */
function hasCountDirective(directives: SimulatorDirectives): boolean {
  // Every count directive is a `cache…Tokens` field, so one added later is covered too.
  return (
    directives.promptTokens !== undefined ||
    Object.entries(directives).some(
      ([name, value]) => name.startsWith('cache') && name.endsWith('Tokens') && value !== undefined,
    )
  );
}

/** The prompt tokens the usage reports: the prompt's count, or the `prompt-tokens=` directive's. */
export function reportedPromptTokens(counted: number, directives: SimulatorDirectives): number {
  return directives.promptTokens ?? counted;
}

/** The counts the directives fix (all uncached when there are none). */
export function directiveCounts(total: number, directives: SimulatorDirectives): CacheCounts {
  // A split without a 1-hour part has written nothing for an hour.
  const split: PromptCacheSplit & { write1h?: number } = splitPromptCache(total, directives);
  return { ...split, write1h: split.write1h ?? 0 };
}

/**
 * The cache to consult for this request, or undefined when the directives decide (or the cache is off): then the
 * caller reports `directiveCounts`.
 */
export function realCacheFor(
  exchange: SimulatorExchange,
  directives: SimulatorDirectives,
): PromptCacheStore | undefined {
  if (directives.promptCache === false || hasCountDirective(directives)) return undefined;
  return exchange.promptCache;
}

/**
 * Entries are per vendor, credential and model, and per routing key where the vendor has one (OpenAI's
 * `prompt_cache_key`): what one account caches, another never reads.
 */
export function cacheScope(vendor: string, exchange: SimulatorExchange, model: string, routingKey = ''): string {
  return [vendor, exchange.apiKey ?? '', model, routingKey].join('\u0000');
}
