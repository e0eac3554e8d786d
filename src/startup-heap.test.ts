/**
 * startup-heap.ts: while starting, V8's new space keeps its initial size however much survives; once start-up
 * is over it grows under allocation as with V8's defaults; an operator's own new-space flag is left alone.
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
