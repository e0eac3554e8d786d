/**
 * startup-heap.ts: while starting, V8's new space keeps its initial size however much survives; once start-up
 * is over it grows under allocation up to its cap; an operator's own new-space flag is left alone.
 * Each case runs in a child process (V8 flags are process-wide), on the compiled module like the CLI tests.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const MODULE = join(import.meta.dirname, '../dist/src/startup-heap.js');

/** New-space size (MB) after surviving allocation while starting, then after the same once start-up is over. */
const PROBE = `
import { getHeapSpaceStatistics } from 'node:v8';
const { endStartupHeapSizing } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
const newSpaceMb = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 1048576;
let kept = [];
const allocate = () => {
  for (let i = 0; i < 300_000; i += 1) {
    kept.push({ i, list: [i] });
    if (kept.length > 200_000) kept = kept.slice(100_000);
  }
};
allocate();
const starting = newSpaceMb();
endStartupHeapSizing();
allocate();
allocate();
console.log(JSON.stringify({ starting, serving: newSpaceMb() }));
`;

async function probe(nodeArgs: string[] = []): Promise<{ starting: number; serving: number }> {
  if (!existsSync(MODULE)) throw new Error(`${MODULE} is missing: run the build first (npm test does).`);
  const { stdout } = await run(process.execPath, [...nodeArgs, '--input-type=module', '-e', PROBE]);
  return JSON.parse(stdout) as { starting: number; serving: number };
}

it('keeps the new space at its initial size while starting and lets it grow afterwards', async () => {
  const { starting, serving } = await probe();
  expect(starting).toBeLessThanOrEqual(4);
  expect(serving).toBeGreaterThanOrEqual(16);
});

it('leaves the new space alone when the operator sizes it with a flag', async () => {
  const { starting } = await probe(['--max-semi-space-size=8']);
  expect(starting).toBeGreaterThan(4);
});

/**
 * The largest new space while serving under allocation that survives scavenges, in slices with a turn of the
 * event loop between them, as a serving gateway's allocation comes.
 */
const SERVING_PROBE = `
import { getHeapSpaceStatistics } from 'node:v8';
const { endStartupHeapSizing } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
const newSpaceMb = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 1048576;
// Objects that stay live (in old space) while serving, as the streams a gateway holds open.
const held = Array.from({ length: Number(process.env.HELD_OBJECTS ?? 0) }, (_, i) => ({ i, text: 'held' + i }));
endStartupHeapSizing();
const ring = new Array(200_000);
let largest = 0;
for (let slice = 0; slice < 60; slice += 1) {
  for (let i = slice * 50_000; i < (slice + 1) * 50_000; i += 1) ring[i % ring.length] = { i, text: 'k' + i, list: [i] };
  largest = Math.max(largest, newSpaceMb());
  await new Promise((resolve) => setImmediate(resolve));
}
console.log(JSON.stringify({ largest, held: held.length }));
`;

async function largestServingNewSpaceMb(nodeArgs: string[] = [], heldObjects = 0): Promise<number> {
  const { stdout } = await run(process.execPath, [...nodeArgs, '--input-type=module', '-e', SERVING_PROBE], {
    env: { ...process.env, HELD_OBJECTS: String(heldObjects) },
  });
  return (JSON.parse(stdout) as { largest: number }).largest;
}

it('once serving, lets the new space grow to 32 MB and no further, unless the operator sizes it', async () => {
  // The operator's 64 MB semi-spaces show the allocation is enough to grow past the cap (V8 13's own maximum on a
  // machine of a few GB or more is the same 2 x 64 MB). Capped, it reads 32 MB and at times some pages more
  // (up to 44.5 MB seen) while a scavenge promotes, as with `--max-semi-space-size=16` itself; it never doubles.
  expect(await largestServingNewSpaceMb(['--max-semi-space-size=64'])).toBeGreaterThanOrEqual(64);
  expect(await largestServingNewSpaceMb()).toBeLessThan(64);
}, 30_000);

it('lets the new space grow past the cap while old space holds more than 128 MB, as with thousands of open streams', async () => {
  // 3 million small objects: ~260 MB of old space. Without them the same allocation stays capped (the test above).
  expect(await largestServingNewSpaceMb([], 3_000_000)).toBeGreaterThanOrEqual(64);
}, 30_000);

/**
 * Full collections after churning objects that live through a few scavenges and are then dropped (the
 * promoted garbage of requests in flight at a scavenge), with a small live set, once start-up is over.
 */
const OLD_SPACE_PROBE = `
import { PerformanceObserver, constants } from 'node:perf_hooks';
const { endStartupHeapSizing } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
let fullCollections = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullCollections += 1;
}).observe({ entryTypes: ['gc'] });
endStartupHeapSizing();
const live = Array.from({ length: 50_000 }, (_, i) => ({ i, text: 'live' + i }));
const ring = new Array(100_000);
for (let i = 0; i < 3_000_000; i += 1) {
  ring[i % ring.length] = { i, list: [i, i + 1], text: 'r' + i };
  if (i % 100_000 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(JSON.stringify({ fullCollections, live: live.length }));
`;

/**
 * GC on the main thread only and no memory reducer: when to collect then depends on allocation alone, not on how
 * fast helper threads mark on a busy machine (which once reversed the counts: 1 full collection against 3).
 */
const DETERMINISTIC_GC = ['--single-threaded-gc', '--no-memory-reducer'];

async function oldSpaceProbe(nodeArgs: string[] = []): Promise<{ fullCollections: number }> {
  const { stdout } = await run(process.execPath, [
    ...DETERMINISTIC_GC,
    ...nodeArgs,
    '--input-type=module',
    '-e',
    OLD_SPACE_PROBE,
  ]);
  return JSON.parse(stdout) as { fullCollections: number };
}

it('once serving, collects old space before it grows far past what is live; an operator’s own growth flag is left alone', async () => {
  // `--heap-growing-percent=0` is V8's default (its dynamic factor), set as an operator would set the flag.
  // The count of full collections is the behaviour, and holds on any machine: it depends on allocation, not on
  // timing. What it saves in RSS is a measurement: two processes' RSS differ by ~1% on a busy machine either way
  // (115.14 against 114.04 MB once), so `npm run bench` reports it as a ratio over alternated runs of this probe
  // (bench/heap-probe.ts), beside the gateway's idle and peak RSS.
  const tuned = await oldSpaceProbe();
  const operatorDefault = await oldSpaceProbe(['--heap-growing-percent=0']);
  expect(tuned.fullCollections).toBeGreaterThan(operatorDefault.fullCollections);
}, 30_000);
