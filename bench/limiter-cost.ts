import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { MemoryRateLimiter } from '../src/ratelimit/memory-rate-limiter.js';
import { RedisRateLimiter } from '../src/ratelimit/redis-rate-limiter.js';

export interface LimiterCost {
  /** Mean cost of one in-process check, microseconds (10,000 keys round-robin, limit never reached). */
  memoryMicrosPerCheck: number;
  /** Sequential checks against Redis: mean microseconds and client round trips per check (null: no Redis). */
  redis: { url: string; microsPerCheck: number; roundTripsPerCheck: number } | null;
}

const MEMORY_CHECKS = 200_000;
const REDIS_CHECKS = 2_000;

/** What a rate-limit check costs, measured in the bench process itself (issue: < 50 µs, one Redis round trip). */
export async function measureLimiterCost(
  redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
): Promise<LimiterCost> {
  const memory = new MemoryRateLimiter({ sweepIntervalMs: 0 });
  for (let i = 0; i < 10_000; i++) memory.checkNow(`warm:${i}`, 1_000_000);
  const started = performance.now();
  for (let i = 0; i < MEMORY_CHECKS; i++) memory.checkNow(`key:${i % 10_000}`, 1_000_000);
  const memoryMicrosPerCheck = ((performance.now() - started) * 1000) / MEMORY_CHECKS;
  await memory.close();
  return { memoryMicrosPerCheck, redis: await measureRedis(redisUrl) };
}

async function measureRedis(url: string): Promise<LimiterCost['redis']> {
  const limiter = new RedisRateLimiter({ redisUrl: url, keyPrefix: `tollgate-bench-${process.pid}:`, failOpen: false });
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1_000 });
  try {
    if (!(await limiter.connect())) return null;
    await probe.connect();
    await limiter.check('bench:warm', 1_000_000_000);
    const before = await scriptCalls(probe);
    const started = performance.now();
    for (let i = 0; i < REDIS_CHECKS; i++) await limiter.check('bench:key', 1_000_000_000);
    const micros = ((performance.now() - started) * 1000) / REDIS_CHECKS;
    const commands = (await scriptCalls(probe)) - before;
    await probe.del(`tollgate-bench-${process.pid}:rl:bench:key`, `tollgate-bench-${process.pid}:rl:bench:warm`);
    return { url, microsPerCheck: micros, roundTripsPerCheck: commands / REDIS_CHECKS };
  } catch {
    return null;
  } finally {
    await limiter.close();
    probe.disconnect();
  }
}

/**
 * Client requests that ran a script (EVALSHA, or EVAL when the script was not cached). Redis also counts the
 * commands a script runs inside itself, so the total command count would overstate the round trips.
 */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const name of ['evalsha', 'eval'])
    calls += Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls;
}
