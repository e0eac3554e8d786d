/**
 * The simulated prompt cache: the `cache-read=` / `cache-write=` directives say how many prompt tokens each
 * vendor reports as cached, so the gateway's billing and its usage plumbing (in streams too,
 * docs/protocols/translation.md#usage-lost-in-streams) are testable deterministically, without a real cache whose hits
 * depend on earlier requests.
 */
import type { SimulatorDirectives } from './fault-directives.js';

export interface PromptCacheSplit {
  /** All prompt tokens. */
  total: number;
  /** Read from the cache (a part of `total`). */
  read: number;
  /** Written to the cache (a part of `total`; only Anthropic reports it). */
  write: number;
  /** `total - read - write`: what Anthropic calls `input_tokens`. */
  uncached: number;
}

export function splitPromptCache(total: number, directives: SimulatorDirectives): PromptCacheSplit {
  const read = Math.min(directives.cacheReadTokens ?? 0, total);
  const write = Math.min(directives.cacheWriteTokens ?? 0, total - read);
  return { total, read, write, uncached: total - read - write };
}
