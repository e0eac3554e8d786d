/**
 * Runs the soak mode (soak.ts) on one gateway.
 */
import { sqliteBackend } from './backends.js';
import {
  assertAlive,
  createAccountKey,
  prepare,
  PROFILE_STOP_GRACE_MS,
  progress,
  startGateway,
  warmUp,
} from './bench-context.js';
import type { Cleanup } from './cleanup.js';
import { TargetClient } from './load.js';
import type { BenchOptions } from './options.js';
import { memory, resetPeakRss } from './processes.js';
import { ROUTES, targetsFor } from './scenarios.js';
import {
  describeMix,
  heapUsedSlope,
  rssSlope,
  sampleIntervalMs,
  soak,
  soakClients,
  SOAK_CONCURRENCY,
  type SoakReport,
} from './soak.js';

/** The soak mode (soak.ts): the gateway on SQLite, warmed up as in a timed run, then mixed load for `seconds`. */
export async function benchSoak(
  options: BenchOptions,
  seconds: number,
  cleanup: Cleanup,
  stop: AbortSignal,
): Promise<SoakReport> {
  const context = await prepare(options, cleanup, stop);
  const backend = sqliteBackend(context.directory);
  cleanup.closeLater(() => backend.drop());
  const key = await createAccountKey(context, backend);
  const started = await startGateway(context, 'gateway-soak', backend.env, true);
  progress('== soak: warming the gateway up');
  await warmUp(
    context,
    Object.values(ROUTES).map((route) => targetsFor(route, context.mockOrigin, started.origin, key).gateway),
    'sw',
  );
  const targets = soakClients().map((entry, index) => ({
    client: new TargetClient(
      targetsFor(ROUTES[entry.route], context.mockOrigin, started.origin, key).gateway,
      entry.clients,
      entry.shape,
      `s${index}`,
    ),
    clients: entry.clients,
  }));
  resetPeakRss(started.gateway.pid);
  progress(`== soak: ${seconds} s of ${describeMix()}`);
  try {
    const load = await soak(
      targets,
      seconds * 1000,
      sampleIntervalMs(seconds),
      started.gateway.pid,
      started.origin,
      stop,
    );
    assertAlive([started.gateway, context.mock]);
    return {
      seconds,
      concurrency: SOAK_CONCURRENCY,
      mix: describeMix(),
      ...load,
      rssSlope: rssSlope(load.samples, seconds),
      heapUsedSlope: heapUsedSlope(load.samples, seconds),
      peakRssKiB: memory(started.gateway.pid).peakRssKiB,
    };
  } finally {
    for (const target of targets) await target.client.destroy();
    await started.gateway.stop(options.cpuProfileDir === undefined ? undefined : PROFILE_STOP_GRACE_MS);
  }
}
