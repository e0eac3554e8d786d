/**
 * Runs the noise-free mode (instruction-count.ts): the gateway, then the floor proxy, each under callgrind.
 */
import { mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { sqliteBackend } from './backends.js';
import {
  CALLGRIND_START_TIMEOUT_MS,
  createAccountKey,
  prepare,
  PROFILE_STOP_GRACE_MS,
  progress,
  startGateway,
} from './bench-context.js';
import type { Cleanup } from './cleanup.js';
import {
  callgrindProblem,
  callgrindWrapper,
  CallgrindProcess,
  countInstructions,
  instructionKinds,
  type InstructionCount,
  type InstructionKind,
} from './instruction-count.js';
import { OptionsError, type BenchOptions } from './options.js';
import { childEnvironment, FLOOR_PATH, listeningUrl, startProcess } from './processes.js';
import { ROUTES, targetsFor, type Target } from './scenarios.js';

export interface InstructionRecord {
  startedAt: string;
  finishedAt: string;
  options: BenchOptions;
  environment: { node: string; cpuModel: string; loadAverageAtStart: number; pinning: string };
  counts: InstructionCount[];
  /** Why nothing was counted (no valgrind here); absent when counts were made. */
  skipped?: string;
}

/**
 * The noise-free mode (instruction-count.ts): the gateway on SQLite with billing on, then the floor proxy, each
 * alone under callgrind on the gateway's core, the same-format route, JSON and stream (and a 500-chunk stream with
 * --shapes, a tenth as many requests: each is 25 short streams' worth of chunks).
 */
export async function benchInstructions(
  options: BenchOptions,
  cleanup: Cleanup,
  stop: AbortSignal,
): Promise<InstructionRecord> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg()[0] ?? 0;
  const problem = await callgrindProblem();
  if (problem !== undefined)
    return {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      options,
      environment: {
        node: process.version,
        cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
        loadAverageAtStart,
        pinning: '-',
      },
      counts: [],
      skipped: problem,
    };
  const context = await prepare(options, cleanup, stop);
  const dumps = options.callgrindDumps ?? join(context.directory, 'callgrind');
  mkdirSync(dumps, { recursive: true });
  const allKinds = instructionKinds(options);
  const kinds = allKinds.filter(
    (kind) => options.callgrindKinds.length === 0 || options.callgrindKinds.includes(kind.kind),
  );
  if (kinds.length === 0)
    throw new OptionsError(`--callgrind-kinds matched none of: ${allKinds.map((kind) => kind.kind).join(', ')}`);
  const counts: InstructionCount[] = [];
  const backend = sqliteBackend(context.directory);
  cleanup.closeLater(() => backend.drop());
  const key = await createAccountKey(context, backend);
  progress('== callgrind: starting the gateway (SQLite) under valgrind; start-up alone takes a minute or more');
  const started = await startGateway(
    context,
    'gateway-callgrind',
    backend.env,
    false,
    callgrindWrapper(dumps, 'gateway'),
  );
  const gatewayTarget = (kind: InstructionKind) =>
    targetsFor(ROUTES[kind.route ?? 'same-format'], context.mockOrigin, started.origin, key).gateway;
  counts.push(
    ...(await countInstructions(
      'gateway',
      new CallgrindProcess(started.gateway, dumps, 'gateway', '127.0.0.1'),
      gatewayTarget,
      kinds,
      'cg',
      stop,
      progress,
    )),
  );
  // Valgrind writes its last dump on exit: give it time rather than kill it mid-write.
  await started.gateway.stop(PROFILE_STOP_GRACE_MS);
  progress('== callgrind: starting the floor proxy under valgrind');
  const floor = startProcess(
    'floor-proxy-callgrind',
    ['--upstream', context.mockOrigin, '--port', '0'],
    childEnvironment({}),
    context.directory,
    {
      core: context.pinning.gatewayCore,
      script: FLOOR_PATH,
      wrapper: callgrindWrapper(dumps, 'floor'),
    },
  );
  cleanup.stopProcess(floor);
  const floorOrigin = await listeningUrl(floor, CALLGRIND_START_TIMEOUT_MS);
  const floorTarget = (kind: InstructionKind): Target => {
    const target = targetsFor(
      ROUTES[kind.route ?? 'same-format'],
      context.mockOrigin,
      started.origin,
      key,
      floorOrigin,
    ).floor;
    if (target === undefined) throw new Error('no floor target');
    return target;
  };
  counts.push(
    ...(await countInstructions(
      'floor',
      new CallgrindProcess(floor, dumps, 'floor', undefined),
      floorTarget,
      kinds,
      'cf',
      stop,
      progress,
    )),
  );
  await floor.stop(PROFILE_STOP_GRACE_MS);
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    options,
    environment: {
      node: process.version,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      loadAverageAtStart,
      pinning: context.pinning.description,
    },
    counts,
  };
}
