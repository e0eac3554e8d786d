/**
 * The scale-out mode (`npm run bench -- --instances 1,2,3`): gateway instances on one PostgreSQL database and one
 * Redis, paid JSON requests (billing on, spread over a dozen accounts) sent to them in equal shares, and for each
 * instance count the total requests per second and where the machine's CPU went: the instances, the database's
 * backend processes (those serving the bench's own database, read from /proc), Redis. An operator reads from it how
 * throughput grows with instances on the hardware at hand, and what share of the CPU the database needs to keep up.
 *
 * Every instance is started once, unpinned (several instances share the cores), and warmed up; a count of k sends
 * to the first k. The database is a fresh one of its own, dropped afterwards.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { AccountsContext } from './accounts.js';
import { createSpreadKeys } from './accounts.js';
import { postgresDatabaseBackend } from './backends.js';
import { createAccountKey, prepare, progress, startGateway, warmUp, type Context } from './bench-context.js';
import type { Cleanup } from './cleanup.js';
import { runRound, TargetClient } from './load.js';
import { parseProcStat } from './machine-noise.js';
import type { BenchOptions } from './options.js';
import { cpuTicks, type ManagedProcess } from './processes.js';
import { ROUTES, targetsFor } from './scenarios.js';

/** Accounts the load is spread over: a dozen divides evenly between 1, 2, 3, 4 or 6 instances. */
const ACCOUNTS = 12;
/** The shortest window per instance count, whatever --rounds and --duration-ms give (--quick: 0.8 s). */
const MIN_SECONDS = 5;
/** Requests in flight in all, whatever the instance count: the same offered load, shared out. */
const CONCURRENCY = 72;

export interface InstanceCountResult {
  instances: number;
  seconds: number;
  requests: number;
  failures: number;
  failureMessages: string[];
  requestsPerSecond: number;
  /** CPU in cores (1.0 = one core busy the whole window). */
  gatewayCores: number;
  /** The backend processes serving the bench's database. */
  databaseCores: number;
  redisCores: number;
  /** Everything busy on the machine (processes, interrupts, steal). */
  machineBusyCores: number;
  /** databaseCores over machineBusyCores. */
  databaseShare: number;
}

export interface ScaleOutReport {
  startedAt: string;
  finishedAt: string;
  options: { instances: number[]; seconds: number; concurrency: number; accounts: number };
  environment: { node: string; cpuModel: string; cpuCount: number; loadAverageAtStart: number };
  results: InstanceCountResult[];
}

/** The backend processes of `database` (their command line names it) and redis-server, by pid. */
export function databaseProcesses(database: string): { postgres: number[]; redis: number[] } {
  const found = { postgres: [] as number[], redis: [] as number[] };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (command === 'redis-server') found.redis.push(Number(entry));
      else if (command === 'postgres' && isBackendOf(readFileSync(`/proc/${entry}/cmdline`, 'utf8'), database))
        found.postgres.push(Number(entry));
    } catch {
      // The process ended while the list was read.
    }
  }
  return found;
}

/**
 * A PostgreSQL backend's command line, `postgres: [cluster: ]user database host(port) state` (the cluster name
 * when the server has one, as Debian's `15/main:`), names its database after the user.
 */
export function isBackendOf(cmdline: string, database: string): boolean {
  const words = cmdline.replaceAll('\0', ' ').trim().split(/\s+/);
  if (words[0] !== 'postgres:') return false;
  const rest = words[1]?.endsWith(':') === true ? words.slice(2) : words.slice(1);
  return rest[1] === database;
}

function ticksOf(pids: readonly number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += cpuTicks(pid);
    } catch {
      // Gone: its ticks went with it (backends live as long as the gateways' pools).
    }
  }
  return sum;
}

interface Sample {
  at: number;
  gateways: number;
  database: number;
  redis: number;
  machineBusy: number;
  machineTotal: number;
}

function sample(gatewayPids: readonly number[], database: string): Sample {
  const processes = databaseProcesses(database);
  const machine = parseProcStat(readFileSync('/proc/stat', 'utf8'));
  return {
    at: performance.now(),
    gateways: ticksOf(gatewayPids),
    database: ticksOf(processes.postgres),
    redis: ticksOf(processes.redis),
    machineBusy: machine.processes + machine.interrupts + machine.steal,
    machineTotal: machine.total,
  };
}

/** The window between two samples, in cores. */
export function coresBetween(
  from: Omit<Sample, 'at'>,
  to: Omit<Sample, 'at'>,
  coreCount: number,
): Pick<InstanceCountResult, 'gatewayCores' | 'databaseCores' | 'redisCores' | 'machineBusyCores' | 'databaseShare'> {
  const wallTicks = (to.machineTotal - from.machineTotal) / coreCount;
  const cores = (ticks: number): number => (wallTicks > 0 ? Math.max(0, ticks) / wallTicks : 0);
  const machineBusyCores = cores(to.machineBusy - from.machineBusy);
  const databaseCores = cores(to.database - from.database);
  return {
    gatewayCores: cores(to.gateways - from.gateways),
    databaseCores,
    redisCores: cores(to.redis - from.redis),
    machineBusyCores,
    databaseShare: machineBusyCores > 0 ? databaseCores / machineBusyCores : 0,
  };
}

export async function benchScaleOut(
  options: BenchOptions,
  counts: readonly number[],
  cleanup: Cleanup,
  stop: AbortSignal,
): Promise<ScaleOutReport> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg()[0] ?? 0;
  // Several instances share the cores: nothing is pinned.
  const context = await prepare({ ...options, pin: false }, cleanup, stop);
  const backend = await postgresDatabaseBackend();
  if (typeof backend === 'string') throw new Error(`--instances needs PostgreSQL and Redis: ${backend}`);
  cleanup.closeLater(() => backend.drop());
  progress(`== scale-out: database ${backend.database}; creating ${ACCOUNTS} accounts with money and a key each`);
  await createAccountKey(context, backend);
  const keys = await createSpreadKeys(accountsContext(context), backend, ACCOUNTS);
  const most = Math.max(...counts);
  progress(`== scale-out: starting ${most} gateway instances`);
  const gateways: { gateway: ManagedProcess; origin: string }[] = [];
  for (let index = 0; index < most; index++)
    gateways.push(await startGateway(context, `gateway-${index + 1}`, backend.env, false));
  const route = ROUTES['same-format'];
  for (const [index, started] of gateways.entries()) {
    progress(`== scale-out: warming instance ${index + 1} up`);
    await warmUp(context, [targetsFor(route, context.mockOrigin, started.origin, keys[0] ?? '').gateway], `iw${index}`);
  }
  // CPU times tick every 10 ms: a window under a few seconds would read in coarse steps.
  const seconds = Math.max(MIN_SECONDS, (options.rounds * options.durationMs) / 1000);
  const results: InstanceCountResult[] = [];
  for (const count of counts) {
    results.push(await measureCount(context, gateways.slice(0, count), keys, seconds, backend.database));
    const last = results.at(-1);
    if (last !== undefined) progress(`  ${formatRow(last)}`);
  }
  for (const started of gateways) await started.gateway.stop();
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    options: { instances: [...counts], seconds, concurrency: CONCURRENCY, accounts: ACCOUNTS },
    environment: {
      node: process.version,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      cpuCount: cpus().length,
      loadAverageAtStart,
    },
    results,
  };
}

/** One account's key per client, the clients dealt out to the instances in turn, all running for `seconds`. */
async function measureCount(
  context: Context,
  gateways: readonly { gateway: ManagedProcess; origin: string }[],
  keys: readonly string[],
  seconds: number,
  database: string,
): Promise<InstanceCountResult> {
  const route = ROUTES['same-format'];
  const perClient = Math.ceil(CONCURRENCY / keys.length);
  const clients = keys.map((key, index) => {
    const instance = gateways[index % gateways.length];
    if (instance === undefined) throw new Error('no instance');
    const target = targetsFor(route, context.mockOrigin, instance.origin, key).gateway;
    return new TargetClient(target, perClient, { stream: false, paceMs: 0 }, `i${gateways.length}c${index}x`);
  });
  const pids = gateways.map((each) => each.gateway.pid);
  try {
    const before = sample(pids, database);
    const rounds = await Promise.all(
      clients.map((client) => runRound(client, { concurrency: perClient }, seconds * 1000, context.stop)),
    );
    const after = sample(pids, database);
    context.stop.throwIfAborted();
    const requests = rounds.reduce((sum, round) => sum + round.requests, 0);
    const failures = rounds.reduce((sum, round) => sum + round.failures, 0);
    const elapsed = (after.at - before.at) / 1000;
    return {
      instances: gateways.length,
      seconds: elapsed,
      requests,
      failures,
      failureMessages: rounds.flatMap((round) => round.failureMessages).slice(0, 5),
      requestsPerSecond: (requests - failures) / elapsed,
      ...coresBetween(before, after, cpus().length),
    };
  } finally {
    for (const client of clients) await client.destroy();
  }
}

function accountsContext(context: Context): AccountsContext {
  return {
    directory: context.directory,
    durationMs: context.options.durationMs,
    warmupMs: context.options.warmupMs,
    rounds: context.options.rounds,
    ticksPerSecond: context.ticksPerSecond,
    stop: context.stop,
    mockOrigin: context.mockOrigin,
    progress,
  };
}

function formatRow(result: InstanceCountResult): string {
  return (
    `${String(result.instances).padStart(9)}${result.requestsPerSecond.toFixed(0).padStart(14)}` +
    `${result.gatewayCores.toFixed(2).padStart(16)}${result.databaseCores.toFixed(2).padStart(16)}` +
    `${result.redisCores.toFixed(2).padStart(10)}${result.machineBusyCores.toFixed(2).padStart(16)}` +
    `${`${(result.databaseShare * 100).toFixed(0)}%`.padStart(12)}${result.failures > 0 ? `  ${result.failures} WRONG` : ''}`
  );
}

/** The table docs/scaling-out.md shows: per instance count, paid req/s and where the CPU went, in cores. */
export function formatScaleOut(report: ScaleOutReport): string {
  const lines = [
    `scale-out: paid same-format JSON requests, ${report.options.concurrency} in flight over ${report.options.accounts} accounts, ${report.options.seconds} s per instance count, ${report.environment.cpuCount} cores`,
    `${'instances'.padStart(9)}${'paid req/s'.padStart(14)}${'gateway cores'.padStart(16)}${'database cores'.padStart(16)}${'Redis'.padStart(10)}${'machine busy'.padStart(16)}${'db share'.padStart(12)}`,
    ...report.results.map(formatRow),
  ];
  for (const result of report.results)
    if (result.failureMessages.length > 0)
      lines.push(`${result.instances} instances, failures: ${result.failureMessages.join(' | ')}`);
  return `${lines.join('\n')}\n`;
}
