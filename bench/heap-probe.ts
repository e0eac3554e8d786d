/**
 * What the gateway's old-space sizing (src/startup-heap.ts) saves in memory, as a ratio: a probe process churns
 * objects that live through a few scavenges and are then dropped (the promoted garbage of requests in flight),
 * with a small live set, once with the gateway's sizing and once with V8's own growth (`--heap-growing-percent=0`,
 * as an operator's flag would set it), alternated PROBE_PAIRS times, and the medians' RSS compared.
 *
 * The unit test (src/startup-heap.test.ts) checks the behaviour (more full collections); two processes' RSS
 * differ by ~1% from run to run on a busy machine either way, so the saving is a measurement, made here.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MODULE = fileURLToPath(new URL('../src/startup-heap.js', import.meta.url));
/** Alternated pairs: the median of five is steady against one slow run. */
const PROBE_PAIRS = 5;

const PROBE = `
const { endStartupHeapSizing } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
endStartupHeapSizing();
const live = Array.from({ length: 50_000 }, (_, i) => ({ i, text: 'live' + i }));
const ring = new Array(100_000);
for (let i = 0; i < 3_000_000; i += 1) {
  ring[i % ring.length] = { i, list: [i, i + 1], text: 'r' + i };
  if (i % 100_000 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(JSON.stringify({ rssMb: process.memoryUsage().rss / 1048576, live: live.length }));
`;

export interface HeapSizingSaving {
  pairs: number;
  /** Median RSS at the end of the probe, MB (2^20 bytes). */
  tunedRssMb: number;
  defaultRssMb: number;
  /** tuned over default: below 1 is a saving. */
  ratio: number;
}

async function probe(nodeArgs: readonly string[]): Promise<number> {
  const { stdout } = await run(process.execPath, [...nodeArgs, '--input-type=module', '-e', PROBE]);
  return (JSON.parse(stdout) as { rssMb: number }).rssMb;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/** The probes one after another (two at once would compete for the cores and the allocator). */
export async function measureHeapSizingSaving(pairs = PROBE_PAIRS): Promise<HeapSizingSaving> {
  const tuned: number[] = [];
  const defaults: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    // Alternating which goes first, so neither always runs on a machine the other just warmed.
    if (pair % 2 === 0) {
      tuned.push(await probe([]));
      defaults.push(await probe(['--heap-growing-percent=0']));
    } else {
      defaults.push(await probe(['--heap-growing-percent=0']));
      tuned.push(await probe([]));
    }
  }
  const tunedRssMb = median(tuned);
  const defaultRssMb = median(defaults);
  return { pairs, tunedRssMb, defaultRssMb, ratio: tunedRssMb / defaultRssMb };
}

export function formatHeapSizingSaving(saving: HeapSizingSaving): string {
  return (
    `old-space sizing (src/startup-heap.ts), churn probe, median of ${saving.pairs}: RSS ${saving.tunedRssMb.toFixed(1)} MB ` +
    `against ${saving.defaultRssMb.toFixed(1)} MB with V8's own growth: ${saving.ratio.toFixed(3)}x`
  );
}
