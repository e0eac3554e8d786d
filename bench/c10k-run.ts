/**
 * Runs the c10k mode (c10k.ts): the gateway on SQLite with billing on, then the floor proxy, each alone holding the
 * slow streams, each child started with the file limit the streams need.

 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { sqliteBackend } from './backends.js';
import {
  benchYaml,
  createAccountKey,
  PROFILE_STOP_GRACE_MS,
  prepare,
  progress,
  startFloor,
  startGateway,
  warmUp,
  type Context,
} from './bench-context.js';
import { descriptorsNeeded, fileLimitProblem, measureC10k, type C10kDependencies, type C10kReport } from './c10k.js';
import type { Cleanup } from './cleanup.js';
import { OptionsError, type BenchOptions, type C10kOptions } from './options.js';
import { cpuTicks, hardFileLimit } from './processes.js';
import { ROUTES, targetsFor } from './scenarios.js';

/** Before reading a proxy's RSS at rest: the warm-up's garbage collected, V8's memory reducer run (~8 s). */
const REST_MS = 10_000;
/** Descriptors the bench process needs besides one per stream (the probes, the CLI, stdio). */
const BENCH_SPARE_DESCRIPTORS = 256;

/** The `Max open files` soft limit of this process, from /proc/self/limits; Infinity when unlimited. */
function ownFileLimit(): number {
  const line = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return line?.[1] === undefined || line[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(line[1]);
}

export async function benchC10k(
  options: BenchOptions,
  c10k: C10kOptions,
  cleanup: Cleanup,
  stop: AbortSignal,
): Promise<C10kReport> {
  const hard = hardFileLimit();
  const problem = fileLimitProblem(c10k.streams, hard);
  if (problem !== undefined) throw new OptionsError(problem);
  const own = ownFileLimit();
  if (c10k.streams + BENCH_SPARE_DESCRIPTORS > own)
    throw new OptionsError(
      `the bench's own file limit (${own}) is below ${c10k.streams} streams' connections: run it under ulimit -n ${c10k.streams + BENCH_SPARE_DESCRIPTORS}`,
    );
  const fileLimit = Math.min(hard, descriptorsNeeded(c10k.streams));
  const startedAt = new Date();
  const loadAverageAtStart = loadavg()[0] ?? 0;
  const context = await prepare(options, cleanup, stop, fileLimit);
  await writeFile(join(context.directory, 'tollgate.yaml'), benchYaml());
  const backend = sqliteBackend(context.directory);
  cleanup.closeLater(() => backend.drop());
  const key = await createAccountKey(context, backend);
  const route = ROUTES['same-format'];
  const deps: C10kDependencies = {
    direct: targetsFor(route, context.mockOrigin, '', key).direct,
    cpuTicks,
    ticksPerSecond: context.ticksPerSecond,
    stop,
    progress,
  };
  const results = [];

  progress(`== c10k: the gateway (SQLite, billing on) holding ${c10k.streams} streams`);
  const gateway = await startGateway(context, 'gateway-c10k', backend.env, true);
  const gatewayTarget = targetsFor(route, context.mockOrigin, gateway.origin, key).gateway;
  await warmAndRest(context, gatewayTarget);
  results.push(await measureC10k({ target: gatewayTarget, pid: gateway.gateway.pid, name: 'gateway' }, c10k, deps));
  // Under --cpu-prof the gateway writes its profile as it exits: a profile of thousands of streams takes a while.
  await gateway.gateway.stop(options.cpuProfileDir === undefined ? undefined : PROFILE_STOP_GRACE_MS);

  progress(`== c10k: the floor proxy holding ${c10k.streams} streams`);
  const floor = await startFloor(context, c10k.streams + c10k.probes);
  const floorTarget = targetsFor(route, context.mockOrigin, gateway.origin, key, floor.origin).floor;
  if (floorTarget === undefined) throw new Error('no floor target');
  await warmAndRest(context, floorTarget);
  results.push(await measureC10k({ target: floorTarget, pid: floor.floor.pid, name: 'floor' }, c10k, deps));
  await floor.floor.stop();

  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    options: c10k,
    environment: {
      node: process.version,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      cpuCount: cpus().length,
      loadAverageAtStart,
      fileLimit: `${fileLimit} per child (hard ${hard}), ${own} for the bench`,
    },
    results,
  };
}

/** The usual warm-up of the route, then a rest so the reading at rest is of a proxy at rest. */
async function warmAndRest(context: Context, target: Parameters<typeof warmUp>[1][number]): Promise<void> {
  await warmUp(context, [target], `kw${target.name[0]}`);
  await delay(REST_MS);
}
