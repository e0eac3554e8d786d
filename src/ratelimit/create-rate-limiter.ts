import { MemoryRateLimiter } from './memory-rate-limiter.js';
import type { RateLimiter } from './rate-limiter.js';
import type { RedisRateLimiter } from './redis-rate-limiter.js';

export interface CreateRateLimiterOptions {
  /** Shared Redis (REDIS_URL); without it the limiter is in-process, exact for one instance only. */
  redisUrl?: string | undefined;
  /** Redis only: admit (default) or refuse with `RateLimiterUnavailableError` when Redis cannot answer. */
  failOpen?: boolean | undefined;
  /** In-process only: injected clock. The Redis limiter always uses the Redis server's clock. */
  now?: (() => number) | undefined;
  /** Redis only: key prefix (default `tollgate:`). */
  keyPrefix?: string | undefined;
  /** Redis only: each backend failure, for logging; count them with `limiterFailures`. */
  onError?: ((error: Error) => void) | undefined;
}

/** The Redis limiter's class once `createRateLimiter` has loaded it; no limiter can be one before that. */
let redisLimiterClass: typeof RedisRateLimiter | undefined;

/**
 * The limiter of the runtime shapes (docs/architecture.md#runtime-shapes): Redis when `redisUrl` is set, in-process
 * otherwise. Async because the Redis limiter first waits (at most its connect timeout) for the connection; an
 * unreachable Redis does not fail start-up, it is reported through `onError` and decisions follow the failure policy
 * until it comes back.
 */
export async function createRateLimiter(options: CreateRateLimiterOptions = {}): Promise<RateLimiter> {
  if (options.redisUrl === undefined || options.redisUrl === '') {
    return new MemoryRateLimiter(options.now === undefined ? {} : { now: options.now });
  }
  // Imported only with a Redis URL: ioredis costs ~20 MB of RSS that an in-process limiter has no use for.
  const { RedisRateLimiter } = await import('./redis-rate-limiter.js');
  redisLimiterClass = RedisRateLimiter;
  const limiter = new RedisRateLimiter({
    redisUrl: options.redisUrl,
    ...(options.failOpen === undefined ? {} : { failOpen: options.failOpen }),
    ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  await limiter.connect();
  return limiter;
}

/** Backend failures so far, for a metrics gauge (always 0 in-process: there is no backend to fail). */
export function limiterFailures(limiter: RateLimiter): number {
  return redisLimiterClass !== undefined && limiter instanceof redisLimiterClass ? limiter.failures : 0;
}
