/**
 * The simulated prompt cache: the `cache-read=` / `cache-write=` / `cache-write-1h=` directives say how many prompt
 * tokens each vendor reports as cached, so the gateway's billing and its usage plumbing (in streams too,
 * docs/protocols/translation.md#usage-lost-in-streams) are testable deterministically, without a real cache whose hits
 * depend on earlier requests.
 */
import type { SimulatorDirectives } from './fault-directives.js';

export interface PromptCacheSplit {
  /** All prompt tokens. */
  total: number;
  /** Read from the cache (a part of `total`). */
  read: number;
  /** Written to the cache, whatever the lifetime (a part of `total`; only Anthropic reports it). */
  write: number;
  /** The part of `write` written for 1 hour (Anthropic's `ephemeral_1h_input_tokens`); the rest is for 5 minutes. */
  write1h: number;
  /** `total - read - write`: what Anthropic calls `input_tokens`. */
  uncached: number;
}

/** Each count is capped at what the prompt has left: reads first, then 1-hour writes, then 5-minute writes. */
export function splitPromptCache(total: number, directives: SimulatorDirectives): PromptCacheSplit {
  const read = Math.min(directives.cacheReadTokens ?? 0, total);
  const write1h = Math.min(directives.cacheWrite1hTokens ?? 0, total - read);
  const write5m = Math.min(directives.cacheWriteTokens ?? 0, total - read - write1h);
  const write = write5m + write1h;
  return { total, read, write, write1h, uncached: total - read - write };
}
