import { describe, expect, it } from 'vitest';
import { breakpointCache } from './breakpoint-cache.js';
import { PromptCacheStore } from './cache-store.js';
import { reconcileTokens, type CacheTtl, type CacheUnit } from './cache-units.js';
import { prefixCache, roundedHit } from './prefix-cache.js';

/** A clock the test moves by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let time = 1_700_000_000_000;
  return { now: () => time, advance: (ms) => (time += ms) };
}

function unit(name: string, tokens: number, breakpoint?: CacheTtl): CacheUnit {
  return { hash: name, tokens, ...(breakpoint === undefined ? {} : { breakpoint }) };
}

const total = (units: readonly CacheUnit[]): number => units.reduce((sum, item) => sum + item.tokens, 0);
const MINUTE = 60_000;

describe('breakpoint cache (Anthropic)', () => {
  const policy = { minimumTokens: 1_024 };

  it('writes a 1h and a 5m segment, then reads the longest prefix and writes only what follows', () => {
    const store = new PromptCacheStore();
    // tools 1,500 (1h breakpoint) → system 500 → turn 700 (5m breakpoint) → question 50 (no breakpoint)
    const first = [unit('tools', 1_500, '1h'), unit('system', 500), unit('turn', 700, '5m'), unit('q1', 50)];
    expect(breakpointCache(store, 's', first, total(first), policy)).toEqual({
      total: 2_750,
      read: 0,
      write: 2_700,
      write1h: 1_500,
      uncached: 50,
    });
    // Turn 2: the earlier prefix unchanged, a new turn with the breakpoint moved to its end.
    const second = [
      unit('tools', 1_500, '1h'),
      unit('system', 500),
      unit('turn', 700),
      unit('q1', 50),
      unit('answer', 300, '5m'),
      unit('q2', 40),
    ];
    expect(breakpointCache(store, 's', second, total(second), policy)).toEqual({
      total: 3_090,
      read: 2_700,
      write: 350,
      write1h: 0,
      uncached: 40,
    });
  });

  it('a changed block invalidates every prefix after it, not the ones before', () => {
    const store = new PromptCacheStore();
    const first = [unit('tools', 1_500, '1h'), unit('system', 500, '5m'), unit('q', 50)];
    breakpointCache(store, 's', first, total(first), policy);
    const changed = [unit('tools', 1_500, '1h'), unit('system-v2', 520, '5m'), unit('q', 50)];
    expect(breakpointCache(store, 's', changed, total(changed), policy)).toEqual({
      total: 2_070,
      read: 1_500,
      write: 520,
      write1h: 0,
      uncached: 50,
    });
    const changedTools = [unit('tools-v2', 1_500, '1h'), unit('system', 500, '5m'), unit('q', 50)];
    expect(breakpointCache(store, 's', changedTools, total(changedTools), policy).read).toBe(0);
  });

  it('never caches a prefix below the model minimum', () => {
    const store = new PromptCacheStore();
    const short = [unit('system', 1_000, '5m'), unit('q', 20)];
    const counts = { total: 1_020, read: 0, write: 0, write1h: 0, uncached: 1_020 };
    expect(breakpointCache(store, 's', short, 1_020, policy)).toEqual(counts);
    expect(breakpointCache(store, 's', short, 1_020, policy)).toEqual(counts);
    expect(store.size).toBe(0);
  });

  it('tokens before a breakpoint below the minimum are written with the next breakpoint that qualifies', () => {
    const store = new PromptCacheStore();
    const units = [unit('a', 800, '1h'), unit('b', 400, '5m'), unit('q', 10)];
    expect(breakpointCache(store, 's', units, 1_210, policy)).toEqual({
      total: 1_210,
      read: 0,
      write: 1_200,
      write1h: 0,
      uncached: 10,
    });
  });

  it('expires after its lifetime, and a read restarts it', () => {
    const clock = manualClock();
    const store = new PromptCacheStore({ clock: clock.now });
    const units = [unit('doc', 2_000, '5m'), unit('q', 10)];
    breakpointCache(store, 's', units, 2_010, policy);
    clock.advance(4 * MINUTE);
    expect(breakpointCache(store, 's', units, 2_010, policy).read).toBe(2_000);
    // 8 minutes after the write, 4 after the read: alive only because the read refreshed it.
    clock.advance(4 * MINUTE);
    expect(breakpointCache(store, 's', units, 2_010, policy).read).toBe(2_000);
    clock.advance(5 * MINUTE + 1);
    expect(breakpointCache(store, 's', units, 2_010, policy)).toMatchObject({ read: 0, write: 2_000 });
  });

  it('a 1h entry outlives a 5m one', () => {
    const clock = manualClock();
    const store = new PromptCacheStore({ clock: clock.now });
    const units = [unit('tools', 1_500, '1h'), unit('doc', 600, '5m'), unit('q', 10)];
    breakpointCache(store, 's', units, 2_110, policy);
    clock.advance(30 * MINUTE);
    expect(breakpointCache(store, 's', units, 2_110, policy)).toEqual({
      total: 2_110,
      read: 1_500,
      write: 600,
      write1h: 0,
      uncached: 10,
    });
  });

  it('looks back 20 blocks from a breakpoint, no further', () => {
    const store = new PromptCacheStore();
    const blocks = Array.from({ length: 30 }, (_, index) => unit(`b${index}`, 200));
    const withBreakpointAt = (index: number): CacheUnit[] =>
      blocks.map((block, at) => (at === index ? { ...block, breakpoint: '5m' as const } : block));
    breakpointCache(store, 's', withBreakpointAt(10), 6_000, policy); // caches blocks 0..10 (2,200 tokens)
    // A breakpoint on block 29 checks blocks 29 down to 10: finds the entry at 10.
    expect(breakpointCache(store, 's', withBreakpointAt(29), 6_000, policy)).toMatchObject({
      read: 2_200,
      write: 3_800,
    });
    const other = new PromptCacheStore();
    expect(breakpointCache(other, 's', withBreakpointAt(9), 6_000, policy).write).toBe(2_000);
    // From block 29 the window ends at block 10: the entry at 9 is out of reach.
    expect(breakpointCache(other, 's', withBreakpointAt(29), 6_000, policy)).toMatchObject({ read: 0, write: 6_000 });
  });

  it('keeps scopes (credential, model) apart', () => {
    const store = new PromptCacheStore();
    const units = [unit('doc', 2_000, '5m'), unit('q', 10)];
    breakpointCache(store, 'key-a', units, 2_010, policy);
    expect(breakpointCache(store, 'key-b', units, 2_010, policy).read).toBe(0);
    expect(breakpointCache(store, 'key-a', units, 2_010, policy).read).toBe(2_000);
  });
});

describe('prefix cache (OpenAI, Gemini, DeepSeek)', () => {
  const openAi = { minimumTokens: 1_024, stepTokens: 128, lifetimeMs: 10 * MINUTE };

  it('rounds hits: OpenAI from 1,024 in steps of 128, DeepSeek in 64s, Gemini exactly', () => {
    expect(roundedHit(1_023, openAi)).toBe(0);
    expect(roundedHit(1_024, openAi)).toBe(1_024);
    expect(roundedHit(1_151, openAi)).toBe(1_024);
    expect(roundedHit(1_152, openAi)).toBe(1_152);
    expect(roundedHit(2_000, openAi)).toBe(1_920);
    expect(roundedHit(127, { minimumTokens: 64, stepTokens: 64, lifetimeMs: 1 })).toBe(64);
    expect(roundedHit(63, { minimumTokens: 64, stepTokens: 64, lifetimeMs: 1 })).toBe(0);
    expect(roundedHit(2_049, { minimumTokens: 2_048, stepTokens: 1, lifetimeMs: 1 })).toBe(2_049);
  });

  it('turn 2 reads the longest prefix turn 1 cached, in 128-token steps', () => {
    const store = new PromptCacheStore();
    const turn1 = [unit('tools', 900), unit('system', 300), unit('user1', 100)];
    expect(prefixCache(store, 's', turn1, 1_300, openAi)).toEqual({
      total: 1_300,
      read: 0,
      write: 0,
      write1h: 0,
      uncached: 1_300,
    });
    const turn2 = [...turn1, unit('assistant1', 80), unit('user2', 50)];
    // 1,300 cached tokens match: 1,024 + 2 × 128 = 1,280.
    expect(prefixCache(store, 's', turn2, 1_430, openAi)).toMatchObject({ read: 1_280, uncached: 150 });
    // A request sharing only tools and system (1,200 tokens) reads 1,152.
    const other = [unit('tools', 900), unit('system', 300), unit('other', 400)];
    expect(prefixCache(store, 's', other, 1_600, openAi).read).toBe(1_152);
  });

  it('caches nothing from a prompt under the minimum', () => {
    const store = new PromptCacheStore();
    const short = [unit('system', 1_000), unit('user', 20)];
    prefixCache(store, 's', short, 1_020, openAi);
    expect(store.size).toBe(0);
    expect(prefixCache(store, 's', short, 1_020, openAi).read).toBe(0);
  });

  it('keeps routing keys apart (OpenAI prompt_cache_key joins the scope)', () => {
    const store = new PromptCacheStore();
    const units = [unit('doc', 1_500), unit('q', 10)];
    prefixCache(store, 'key\u0000conversation-a', units, 1_510, openAi);
    expect(prefixCache(store, 'key\u0000conversation-b', units, 1_510, openAi).read).toBe(0);
    expect(prefixCache(store, 'key\u0000conversation-a', units, 1_510, openAi).read).toBe(1_408);
  });

  it('expires after its lifetime unless used', () => {
    const clock = manualClock();
    const store = new PromptCacheStore({ clock: clock.now });
    const units = [unit('doc', 1_500), unit('q', 10)];
    prefixCache(store, 's', units, 1_510, openAi);
    clock.advance(9 * MINUTE);
    expect(prefixCache(store, 's', units, 1_510, openAi).read).toBe(1_408);
    clock.advance(9 * MINUTE);
    expect(prefixCache(store, 's', units, 1_510, openAi).read).toBe(1_408);
    clock.advance(10 * MINUTE + 1);
    expect(prefixCache(store, 's', units, 1_510, openAi).read).toBe(0);
  });
});

describe('cache store', () => {
  it('holds at most maxEntries, forgetting the least recently used', () => {
    const store = new PromptCacheStore({ maxEntries: 3 });
    for (const key of ['a', 'b', 'c']) store.write(key, 1, MINUTE);
    store.refresh('a');
    store.write('d', 1, MINUTE);
    expect(store.size).toBe(3);
    expect(store.peek('b')).toBeUndefined();
    expect([store.peek('a'), store.peek('c'), store.peek('d')]).toEqual([1, 1, 1]);
  });

  it('stays bounded under many distinct prompts', () => {
    const store = new PromptCacheStore({ maxEntries: 100 });
    const policy = { minimumTokens: 10, stepTokens: 1, lifetimeMs: MINUTE };
    for (let index = 0; index < 1_000; index++)
      prefixCache(store, 's', [unit(`system${index}`, 50), unit('q', 5)], 55, policy);
    expect(store.size).toBe(100);
  });
});

describe('token reconciliation', () => {
  it('makes the units add up to the vendor count, taking from the end', () => {
    const units = [unit('a', 10), unit('b', 5), unit('c', 2)];
    reconcileTokens(units, 20);
    expect(units.map((item) => item.tokens)).toEqual([10, 5, 5]);
    reconcileTokens(units, 12);
    expect(units.map((item) => item.tokens)).toEqual([10, 2, 0]);
  });
});
