import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from './memory-rate-limiter.js';
import type { RateLimitDecision } from './rate-limiter.js';

const MINUTE = 60_000;
/** Half a second before a minute boundary, so every simulated run crosses several. */
const T0 = Date.UTC(2025, 0, 1, 0, 0, 59, 500);

/** A clock the test moves by hand. */
function manualClock(start = T0): { now: () => number; set(value: number): void; advance(ms: number): void } {
  let current = start;
  return {
    now: () => current,
    set: (value) => {
      current = value;
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

/** Deterministic PRNG (mulberry32) so a failing random run can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Brute force: the most admissions inside any half-open interval [a, a + window) (one starts at an admission). */
function maxInAnyWindow(admitted: number[], windowMs: number): number {
  let max = 0;
  for (const start of admitted) {
    const inside = admitted.filter((time) => time >= start && time < start + windowMs).length;
    max = Math.max(max, inside);
  }
  return max;
}

const limiters: MemoryRateLimiter[] = [];
function limiter(now: () => number): MemoryRateLimiter {
  const created = new MemoryRateLimiter({ now });
  limiters.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(limiters.splice(0).map((item) => item.close()));
});

describe('MemoryRateLimiter', () => {
  it('admits exactly the limit of 150 concurrent checks and tells the refused when the oldest leaves', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    await rl.check('key-a', 100); // the oldest admission, at T0
    clock.advance(12_345);

    const decisions = await Promise.all(Array.from({ length: 149 }, () => rl.check('key-a', 100)));
    const allowed = decisions.filter((item) => item.allowed);
    const refused = decisions.filter((item) => !item.allowed);
    expect(allowed).toHaveLength(99);
    expect(refused).toHaveLength(50);
    const expectedResetMs = T0 + MINUTE - clock.now(); // 47,655 ms
    for (const item of refused) {
      expect(item).toEqual({
        allowed: false,
        limit: 100,
        remaining: 0,
        resetMs: expectedResetMs,
        retryAfterSeconds: Math.ceil(expectedResetMs / 1000),
      });
    }
    expect(refused[0]?.retryAfterSeconds).toBe(48);
    // The last admission filled the window: it reports no room left and the same reset.
    expect(allowed.at(-1)).toMatchObject({ remaining: 0, resetMs: expectedResetMs, retryAfterSeconds: 0 });
    expect(allowed[0]).toMatchObject({ remaining: 98, resetMs: 0 });

    const other = await rl.check('key-b', 100);
    expect(other).toEqual({ allowed: true, limit: 100, remaining: 99, resetMs: 0, retryAfterSeconds: 0 });
  });

  it('admits 100 of 150 fired at the same instant; the refused wait the full minute', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    const decisions = await Promise.all(Array.from({ length: 150 }, () => rl.check('burst', 100)));
    expect(decisions.filter((item) => item.allowed)).toHaveLength(100);
    const refused = decisions.filter((item) => !item.allowed);
    expect(refused).toHaveLength(50);
    expect(new Set(refused.map((item) => item.retryAfterSeconds))).toEqual(new Set([60]));
    expect((await rl.check('someone-else', 100)).allowed).toBe(true);
  });

  it('a retry after exactly retry-after seconds is admitted', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    for (let i = 0; i < 3; i += 1) {
      await rl.check('k', 3);
      clock.advance(250);
    }
    const refused = await rl.check('k', 3);
    expect(refused.allowed).toBe(false);
    clock.advance(refused.resetMs - 1);
    expect((await rl.check('k', 3)).allowed).toBe(false);
    clock.advance(1);
    expect((await rl.check('k', 3)).allowed).toBe(true);
  });

  it.each([
    { limit: 100, windowMs: MINUTE, seed: 1 },
    { limit: 100, windowMs: MINUTE, seed: 2 },
    { limit: 7, windowMs: MINUTE, seed: 3 },
    { limit: 5, windowMs: 1_000, seed: 4 },
  ])(
    'random arrivals over 5 simulated minutes never exceed $limit in any window ($windowMs ms, seed $seed)',
    async ({ limit, windowMs, seed }) => {
      const clock = manualClock();
      const rl = limiter(clock.now);
      const next = random(seed);
      const end = T0 + 5 * MINUTE;
      // About three times the limit on average, in bursts: many arrivals share a millisecond.
      const meanGap = windowMs / (3 * limit);
      const admitted: number[] = [];
      const refusals: Array<{ at: number; decision: RateLimitDecision }> = [];
      while (clock.now() < end) {
        const burst = next() < 0.1 ? 1 + Math.floor(next() * 20) : 1;
        for (let i = 0; i < burst; i += 1) {
          const decision = await rl.check('subject', limit, windowMs);
          if (decision.allowed) admitted.push(clock.now());
          else refusals.push({ at: clock.now(), decision });
        }
        clock.advance(Math.floor(next() * 2 * meanGap));
      }
      expect(refusals.length).toBeGreaterThan(0);
      expect(maxInAnyWindow(admitted, windowMs)).toBeLessThanOrEqual(limit);
      // Never stricter than needed: each refusal found the window (at − window, at] full, and its reset is
      // exactly when the oldest admission in it leaves.
      for (const { at, decision } of refusals) {
        const inWindow = admitted.filter((time) => time > at - windowMs && time <= at);
        expect(inWindow).toHaveLength(limit);
        expect(decision.resetMs).toBe((inWindow[0] as number) + windowMs - at);
        expect(decision.retryAfterSeconds).toBe(Math.ceil(decision.resetMs / 1000));
      }
    },
  );

  it('never refuses a client pacing exactly at the limit for 5 simulated minutes', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    const decisions: RateLimitDecision[] = [];
    for (let at = T0; at < T0 + 5 * MINUTE; at += 600) {
      clock.set(at);
      decisions.push(await rl.check('paced', 100));
    }
    expect(decisions).toHaveLength(500);
    expect(decisions.every((item) => item.allowed)).toBe(true);
    // From the second minute on the window is exactly full after each admission.
    expect(decisions.at(-1)).toMatchObject({ remaining: 0, resetMs: 600 });
  });

  it('does not count refused requests against the window', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    for (let i = 0; i < 10; i += 1) expect((await rl.check('hammer', 10)).allowed).toBe(true);
    for (let at = 1; at < MINUTE; at += 50) {
      clock.set(T0 + at);
      expect((await rl.check('hammer', 10)).allowed).toBe(false);
    }
    clock.set(T0 + MINUTE);
    const decisions = await Promise.all(Array.from({ length: 11 }, () => rl.check('hammer', 10)));
    expect(decisions.filter((item) => item.allowed)).toHaveLength(10);
  });

  it('applies a lowered limit to what the window already holds', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    for (let i = 0; i < 10; i += 1) {
      await rl.check('downgraded', 10);
      clock.advance(1_000);
    }
    // 10 held at T0 … T0+9 s; a limit of 4 has room once all but 3 left: after the one at T0+6 s leaves.
    const refused = await rl.check('downgraded', 4);
    expect(refused).toMatchObject({
      allowed: false,
      limit: 4,
      remaining: 0,
      resetMs: T0 + 6_000 + MINUTE - clock.now(),
    });
    clock.set(T0 + 6_000 + MINUTE);
    expect((await rl.check('downgraded', 4)).allowed).toBe(true);
  });

  it('keeps admissions through a clock that steps back', async () => {
    const clock = manualClock();
    const rl = limiter(clock.now);
    await rl.check('skew', 2);
    clock.advance(-5_000);
    await rl.check('skew', 2);
    // Both are still held a minute after the first: the second was recorded at T0, not at T0 − 5 s.
    clock.set(T0 + MINUTE - 1);
    expect((await rl.check('skew', 2)).allowed).toBe(false);
    clock.set(T0 + MINUTE);
    expect((await rl.check('skew', 2)).allowed).toBe(true);
  });

  it('rejects meaningless limits', async () => {
    const rl = limiter(() => T0);
    expect(() => rl.checkNow('x', 0)).toThrow(RangeError);
    expect(() => rl.checkNow('x', 1.5)).toThrow(RangeError);
    expect(() => rl.checkNow('x', 10, 0)).toThrow(RangeError);
  });

  describe('memory', () => {
    it('keeps a subject while any of its admissions counts', async () => {
      const clock = manualClock();
      const rl = limiter(clock.now);
      await rl.check('kept', 1);
      clock.set(T0 + MINUTE - 1);
      expect(rl.sweep()).toBe(0);
      expect((await rl.check('kept', 1)).allowed).toBe(false);
    });

    it('re-queues instead of evicting a subject written again since it was queued', async () => {
      const clock = manualClock();
      const rl = limiter(clock.now);
      await rl.check('busy', 2);
      clock.set(T0 + 30_000);
      await rl.check('busy', 2);
      clock.set(T0 + MINUTE);
      expect(rl.sweep()).toBe(0);
      // The admission at T0 + 30 s still counts: one slot, not two.
      expect(await rl.check('busy', 2)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await rl.check('busy', 2)).allowed).toBe(false);
      clock.set(T0 + 2 * MINUTE);
      expect(rl.sweep()).toBe(1);
    });

    it('evicts idle subjects: 100k keys touched once are dropped after the window', async () => {
      const clock = manualClock();
      const rl = limiter(clock.now);
      for (let i = 0; i < 100_000; i += 1) rl.checkNow(`key-${i}`, 100);
      expect(rl.trackedSubjects).toBe(100_000);
      clock.advance(MINUTE);
      expect(rl.sweep()).toBe(100_000);
      expect(rl.trackedSubjects).toBe(0);
    });

    it('evicts idle subjects during checks, without a sweep', () => {
      const clock = manualClock();
      const rl = limiter(clock.now);
      for (let i = 0; i < 100_000; i += 1) rl.checkNow(`old-${i}`, 100);
      clock.advance(MINUTE);
      // Each check drops a few idle subjects before adding its own: the old ones are gone after 25k checks.
      for (let i = 0; i < 50_000; i += 1) rl.checkNow(`new-${i}`, 100);
      expect(rl.trackedSubjects).toBe(50_000);
    });

    it('sweeps on an unref’d timer when traffic stops', async () => {
      const clock = manualClock();
      const rl = new MemoryRateLimiter({ now: clock.now, sweepIntervalMs: 10 });
      limiters.push(rl);
      for (let i = 0; i < 1_000; i += 1) rl.checkNow(`idle-${i}`, 5);
      clock.advance(MINUTE);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(rl.trackedSubjects).toBe(0);
    });
  });

  describe('tokens per minute', () => {
    const SECOND_ALIGNED = Date.UTC(2025, 0, 1, 0, 0, 30);

    it('refuses while the tokens recorded in the window reach the limit, until their bucket leaves', async () => {
      const clock = manualClock(SECOND_ALIGNED);
      const rl = limiter(clock.now);
      expect(await rl.checkTokens('t', 1_000)).toEqual({
        allowed: true,
        limit: 1_000,
        remaining: 1_000,
        resetMs: 0,
        retryAfterSeconds: 0,
      });
      await rl.recordTokens('t', 600);
      clock.advance(10_000);
      await rl.recordTokens('t', 500);
      expect(await rl.checkTokens('t', 2_000)).toMatchObject({ allowed: true, remaining: 900 });

      const refused = await rl.checkTokens('t', 1_000);
      // Below the limit once the first bucket (600 tokens, recorded in [T, T+1 s)) has wholly left the window.
      expect(refused).toEqual({
        allowed: false,
        limit: 1_000,
        remaining: 0,
        resetMs: 60_999 - 10_000,
        retryAfterSeconds: 51,
      });
      clock.set(SECOND_ALIGNED + 60_998);
      expect((await rl.checkTokens('t', 1_000)).allowed).toBe(false);
      clock.set(SECOND_ALIGNED + 60_999);
      expect(await rl.checkTokens('t', 1_000)).toMatchObject({ allowed: true, remaining: 500 });
    });

    it('keeps token logs separate per subject and evicts them when idle', async () => {
      const clock = manualClock(SECOND_ALIGNED);
      const rl = limiter(clock.now);
      await rl.recordTokens('a', 5_000);
      expect((await rl.checkTokens('a', 1_000)).allowed).toBe(false);
      expect((await rl.checkTokens('b', 1_000)).allowed).toBe(true);
      expect(rl.trackedSubjects).toBe(1);
      clock.advance(61_000);
      expect(rl.sweep()).toBe(1);
    });
  });
});
