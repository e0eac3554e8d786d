/**
 * Against the real Redis on this machine (redis://127.0.0.1:6379). If it is down these tests fail: they
 * never skip. Every key lives under a prefix unique to this run and is deleted afterwards.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer, connect as connectTcp, type AddressInfo, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { deadRedisUrl } from '../../test/helpers/free-port.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRateLimiter, limiterFailures } from './create-rate-limiter.js';
import { MemoryRateLimiter } from './memory-rate-limiter.js';
import { RateLimiterUnavailableError, type RateLimiter } from './rate-limiter.js';
import type { ChildArguments, ChildMessage } from './redis-rate-limiter.test-child.js';
import { RedisRateLimiter, type RedisRateLimiterOptions } from './redis-rate-limiter.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `tollgate-test:${process.pid}-${Date.now().toString(36)}:`;

let admin: Redis;
const opened: RateLimiter[] = [];

async function openLimiter(options: Partial<RedisRateLimiterOptions> = {}): Promise<RedisRateLimiter> {
  // Fail-closed unless a test says otherwise: a Redis error must fail the test, not pass as an admission.
  const limiter = new RedisRateLimiter({ redisUrl: REDIS_URL, keyPrefix: PREFIX, failOpen: false, ...options });
  opened.push(limiter);
  expect(await limiter.connect()).toBe(true);
  return limiter;
}

async function serverTimeMs(): Promise<number> {
  const [seconds, micros] = await admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Why Redis is unusable, if it is: every test then fails with it (a failing beforeAll would only skip them). */
let redisDown: Error | undefined;

beforeAll(async () => {
  admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  admin.on('error', () => {});
  try {
    await admin.connect();
    if ((await admin.ping()) !== 'PONG') throw new Error('PING did not answer PONG');
  } catch (error) {
    redisDown = new Error(`The real Redis at ${REDIS_URL} is required for these tests: ${String(error)}`);
  }
});

beforeEach(() => {
  if (redisDown !== undefined) throw redisDown;
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((limiter) => limiter.close()));
});

afterAll(async () => {
  if (redisDown !== undefined) {
    admin.disconnect();
    return;
  }
  const keys = await admin.keys(`${PREFIX}*`);
  if (keys.length > 0) await admin.del(...keys);
  await admin.quit();
});

describe('RedisRateLimiter on the real Redis', () => {
  it('admits exactly 100 of 150 concurrent checks; the refused get the oldest admission’s retry-after', async () => {
    const limiter = await openLimiter();
    const decisions = await Promise.all(Array.from({ length: 150 }, () => limiter.check('burst', 100)));
    const after = await serverTimeMs();

    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(100);
    const refused = decisions.filter((decision) => !decision.allowed);
    expect(refused).toHaveLength(50);
    const key = `${PREFIX}rl:burst`;
    expect(await admin.zcard(key)).toBe(100);
    const [, oldestScore] = await admin.zrange(key, 0, 0, 'WITHSCORES');
    const oldest = Number(oldestScore);
    for (const decision of refused) {
      expect(decision.remaining).toBe(0);
      // Decided between the oldest admission and `after`, on the server clock: reset = oldest + 60 s − then.
      expect(decision.resetMs).toBeGreaterThanOrEqual(oldest + 60_000 - after);
      expect(decision.resetMs).toBeLessThanOrEqual(60_000);
      expect(decision.retryAfterSeconds).toBe(Math.ceil(decision.resetMs / 1000));
    }
    expect(refused[0]?.retryAfterSeconds).toBe(60);

    expect(await limiter.check('another-key', 100)).toEqual({
      allowed: true,
      limit: 100,
      remaining: 99,
      resetMs: 0,
      retryAfterSeconds: 0,
    });
  });

  it('does not record refused checks, and admits again exactly when retry-after says', async () => {
    const limiter = await openLimiter();
    const windowMs = 1_500;
    expect((await limiter.check('short', 3, windowMs)).allowed).toBe(true);
    // Later admissions keep the key alive (its TTL follows the newest), so only the script can free the slot.
    await sleep(400);
    const burst = await Promise.all(Array.from({ length: 20 }, () => limiter.check('short', 3, windowMs)));
    expect(burst.filter((decision) => decision.allowed)).toHaveLength(2);
    expect(await admin.zcard(`${PREFIX}rl:short`)).toBe(3);

    const refused = await limiter.check('short', 3, windowMs);
    expect(refused.allowed).toBe(false);
    expect(refused.resetMs).toBeLessThan(windowMs - 300);
    await sleep(refused.resetMs - 150);
    expect((await limiter.check('short', 3, windowMs)).allowed).toBe(false);
    await sleep(170);
    expect(await limiter.check('short', 3, windowMs)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('gives keys a TTL of the window, so idle subjects vanish from Redis', async () => {
    const limiter = await openLimiter();
    await limiter.check('ttl', 10);
    const ttl = await admin.pttl(`${PREFIX}rl:ttl`);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    await limiter.check('gone', 10, 200);
    expect(await admin.exists(`${PREFIX}rl:gone`)).toBe(1);
    await sleep(300);
    expect(await admin.exists(`${PREFIX}rl:gone`)).toBe(0);
  });

  it('shares one budget between two limiter instances on separate connections', async () => {
    const [one, two] = [await openLimiter(), await openLimiter()];
    const decisions = await Promise.all(
      Array.from({ length: 150 }, (_, index) => (index % 2 === 0 ? one : two).check('shared', 100)),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(100);
  });

  it('shares one budget with a second process', async () => {
    const subject = 'two-processes';
    const child = startChild({ redisUrl: REDIS_URL, keyPrefix: PREFIX, subject, checks: 150, limit: 100 });
    try {
      expect(await child.next()).toEqual({ type: 'ready' });
      const limiter = await openLimiter();
      child.go();
      const [mine, theirs] = await Promise.all([
        Promise.all(Array.from({ length: 150 }, () => limiter.check(subject, 100))),
        child.next(),
      ]);
      if (theirs.type !== 'done') throw new Error(`child: ${JSON.stringify(theirs)}`);
      const allowedHere = mine.filter((decision) => decision.allowed).length;
      expect(allowedHere + theirs.allowed).toBe(100);
      expect(await admin.zcard(`${PREFIX}rl:${subject}`)).toBe(100);
    } finally {
      child.kill();
    }
  });

  it('limits tokens per window from recorded usage', async () => {
    const limiter = await openLimiter();
    expect(await limiter.checkTokens('tokens', 1_000)).toMatchObject({ allowed: true, remaining: 1_000 });
    await limiter.recordTokens('tokens', 600);
    await limiter.recordTokens('tokens', 500);
    expect(await limiter.checkTokens('tokens', 2_000)).toMatchObject({ allowed: true, remaining: 900 });
    const refused = await limiter.checkTokens('tokens', 1_000);
    expect(refused.allowed).toBe(false);
    // Both writes fell in the same (or adjacent) 1 s bucket: below the limit only once it has left the window.
    expect(refused.resetMs).toBeGreaterThan(59_000);
    expect(refused.resetMs).toBeLessThanOrEqual(61_000);
    expect(await admin.pttl(`${PREFIX}tpm:tokens`)).toBeGreaterThan(59_000);
    expect((await limiter.checkTokens('other-tokens', 1_000)).allowed).toBe(true);
  });

  it('rejects meaningless limits before calling Redis', async () => {
    const limiter = await openLimiter();
    await expect(limiter.check('x', 0)).rejects.toThrow(RangeError);
    expect(limiter.failures).toBe(0);
  });
});

describe('when Redis fails', () => {
  it('fail-open (default) admits without hanging, reports and counts the failure', async () => {
    const errors: Error[] = [];
    const limiter = await createRateLimiter({
      redisUrl: await deadRedisUrl(),
      keyPrefix: PREFIX,
      onError: (error) => errors.push(error),
    });
    opened.push(limiter);
    // A check queued until Redis comes back would hang until the test's timeout; it is decided at once instead.
    const decision = await limiter.check('dead', 100);

    expect(decision).toEqual({ allowed: true, limit: 100, remaining: 99, resetMs: 0, retryAfterSeconds: 0 });
    expect(limiterFailures(limiter)).toBe(1);
    expect(errors.at(-1)?.message).toMatch(/ECONNREFUSED/);
  });

  it('fail-closed throws RateLimiterUnavailableError (for a 503) without hanging; token writes never throw', async () => {
    const limiter = await createRateLimiter({ redisUrl: await deadRedisUrl(), keyPrefix: PREFIX, failOpen: false });
    opened.push(limiter);
    // Not queued until Redis comes back (that would hang until the test's timeout): refused at once.
    const failure = await limiter.check('dead', 100).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RateLimiterUnavailableError);
    expect((failure as RateLimiterUnavailableError).retryAfterSeconds).toBe(1);
    await expect(limiter.checkTokens('dead', 100)).rejects.toBeInstanceOf(RateLimiterUnavailableError);
    await expect(limiter.recordTokens('dead', 100)).resolves.toBeUndefined();
    expect(limiterFailures(limiter)).toBe(3);
  });

  it('a Redis that stops answering costs one command timeout, and service resumes when it answers again', async () => {
    const proxy = await startStallingProxy(6379);
    try {
      const limiter = await openLimiter({
        redisUrl: `redis://127.0.0.1:${proxy.port}`,
        failOpen: true,
        commandTimeoutMs: 200,
      });
      expect((await limiter.check('stall', 10)).remaining).toBe(9);

      proxy.stall();
      const started = performance.now();
      const decision = await limiter.check('stall', 10);
      const elapsed = performance.now() - started;
      expect(elapsed).toBeLessThan(1_000);
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(decision).toMatchObject({ allowed: true, remaining: 9 });
      expect(limiter.failures).toBe(1);

      proxy.resume();
      // The stalled script still ran once Redis answered (a timeout cannot take back what the server did), so
      // the window now holds three admissions.
      await sleep(50);
      expect(await limiter.check('stall', 10)).toMatchObject({ allowed: true, remaining: 7 });
      expect(limiter.failures).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});

describe('createRateLimiter', () => {
  it('is in-process without a Redis URL and on Redis with one', async () => {
    const memory = await createRateLimiter({ now: () => 0 });
    opened.push(memory);
    expect(memory).toBeInstanceOf(MemoryRateLimiter);
    expect(limiterFailures(memory)).toBe(0);

    const shared = await createRateLimiter({ redisUrl: REDIS_URL, keyPrefix: PREFIX });
    opened.push(shared);
    expect(shared).toBeInstanceOf(RedisRateLimiter);
    expect(await shared.check('factory', 5)).toMatchObject({ allowed: true, remaining: 4 });
    expect(await admin.zcard(`${PREFIX}rl:factory`)).toBe(1);
  });
});

interface Child {
  next(): Promise<ChildMessage>;
  go(): void;
  kill(): void;
}

/** The child script under vite-node (it runs the TypeScript source directly), talking over IPC. */
function startChild(args: ChildArguments): Child {
  const here = dirname(fileURLToPath(import.meta.url));
  const viteNode = join(dirname(createRequire(import.meta.url).resolve('vite-node/package.json')), 'vite-node.mjs');
  const child = spawn(process.execPath, [viteNode, join(here, 'redis-rate-limiter.test-child.ts')], {
    env: { ...process.env, TOLLGATE_RL_CHILD: JSON.stringify(args) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ChildMessage[] = [];
  const waiters: Array<(message: ChildMessage) => void> = [];
  child.on('message', (message: ChildMessage) => {
    const waiter = waiters.shift();
    if (waiter === undefined) messages.push(message);
    else waiter(message);
  });
  child.on('exit', (code) => {
    for (const waiter of waiters.splice(0)) waiter({ type: 'failed', error: `exited with ${code}` });
  });
  return {
    next: () => {
      const queued = messages.shift();
      return queued === undefined ? new Promise((resolve) => waiters.push(resolve)) : Promise.resolve(queued);
    },
    go: () => {
      child.send('go');
    },
    kill: () => {
      if (child.exitCode === null) child.kill();
    },
  };
}

interface StallingProxy {
  port: number;
  /** Hold every byte from clients from now on, as a hung Redis would. */
  stall(): void;
  /** Pass the held bytes on and carry on normally. */
  resume(): void;
  close(): Promise<void>;
}

/** A TCP proxy to the real Redis that can stop forwarding without closing anything. */
async function startStallingProxy(targetPort: number): Promise<StallingProxy> {
  let stalled = false;
  const held: Array<{ upstream: Socket; data: Buffer }> = [];
  const sockets: Socket[] = [];
  const server: Server = createServer((client) => {
    const upstream = connectTcp(targetPort, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('data', (data: Buffer) => {
      if (stalled) held.push({ upstream, data });
      else upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => client.write(data));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stall: () => {
      stalled = true;
    },
    resume: () => {
      stalled = false;
      for (const { upstream, data } of held.splice(0)) upstream.write(data);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
