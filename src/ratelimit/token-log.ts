/**
 * Tokens used by one subject in the rolling window, for the optional tokens-per-minute limit.
 *
 * Unlike requests, tokens are summed into buckets of 1/60 of the window (1 s for a minute): one entry per
 * response would make memory grow with request rate, and a token limit has no "exactly N" acceptance test. A
 * bucket counts until its LAST instant leaves the window, so the error is at most one bucket and always on the
 * strict side (tokens are remembered up to 1 s too long, never forgotten early). `redis-scripts.ts` applies the
 * same arithmetic so both backends agree.
 */

/** Buckets per window: fine enough that the strictness error is small, coarse enough to keep 60 entries. */
export const TOKEN_BUCKETS_PER_WINDOW = 60;

export function tokenBucketMs(windowMs: number): number {
  return Math.max(1, Math.floor(windowMs / TOKEN_BUCKETS_PER_WINDOW));
}

/** The first instant at which `bucket` no longer counts: its last millisecond has left the window. */
export function tokenBucketExpiresAt(bucket: number, bucketMs: number, windowMs: number): number {
  return (bucket + 1) * bucketMs - 1 + windowMs;
}

export interface TokenUsage {
  /** Tokens recorded in the window. */
  used: number;
  /** ms until `used` falls below `limit` (0 when it already is). */
  resetMs: number;
}

export class TokenLog {
  /** Bucket numbers, ascending, and their token sums at the same index. */
  private readonly buckets: number[] = [];
  private readonly tokens: number[] = [];

  add(now: number, tokens: number, windowMs: number): void {
    const bucket = Math.floor(now / tokenBucketMs(windowMs));
    const last = this.buckets.length - 1;
    // A clock that steps back lands in an older bucket; adding to the newest keeps order and stays strict.
    if (last >= 0 && (this.buckets[last] as number) >= bucket) {
      this.tokens[last] = (this.tokens[last] as number) + tokens;
    } else {
      this.buckets.push(bucket);
      this.tokens.push(tokens);
    }
  }

  usage(now: number, limit: number, windowMs: number): TokenUsage {
    const bucketMs = tokenBucketMs(windowMs);
    let expired = 0;
    while (
      expired < this.buckets.length &&
      tokenBucketExpiresAt(this.buckets[expired] as number, bucketMs, windowMs) <= now
    ) {
      expired += 1;
    }
    if (expired > 0) {
      this.buckets.splice(0, expired);
      this.tokens.splice(0, expired);
    }
    let used = 0;
    for (const count of this.tokens) used += count;
    let left = used;
    for (let index = 0; index < this.buckets.length && left >= limit; index += 1) {
      left -= this.tokens[index] as number;
      if (left < limit) {
        return { used, resetMs: tokenBucketExpiresAt(this.buckets[index] as number, bucketMs, windowMs) - now };
      }
    }
    return { used, resetMs: 0 };
  }

  /** The instant after which nothing recorded here counts any more (the log may then be dropped). */
  idleAt(windowMs: number): number {
    const newest = this.buckets[this.buckets.length - 1];
    return newest === undefined
      ? Number.NEGATIVE_INFINITY
      : tokenBucketExpiresAt(newest, tokenBucketMs(windowMs), windowMs);
  }
}
