/**
 * `--accounts`: one hot account against 50 accounts on the same gateway, same-format JSON at concurrency
 * 64. On PostgreSQL every hold and settlement writes its account's row, so when all requests bill one account they
 * queue on that row's lock; spread over 50 accounts they do not. The two loads run in alternating turns (hot first in
 * even rounds), each reporting requests per second and the gateway's CPU per request; then a second gateway reaching
 * PostgreSQL through the counting relay runs each load for one turn, giving round trips per request under load
 * (amortised: statements that serve several requests count once). Last, `tollgate ledger verify` checks that every
 * balance still equals the sum of its ledger.
 */
import { RoundTripProxy } from './round-trip-proxy.js';
import { runRound, TargetClient, type RoundResult } from './load.js';
import { childEnvironment, cpuTicks, runCliJson, type ManagedProcess } from './processes.js';
import type { Backend } from './backends.js';
import { ROUTES, targetsFor, type Scenario } from './scenarios.js';
import { REPLY_CHUNKS } from './mock-reply.js';

export const SPREAD_ACCOUNTS = 50;
export const ACCOUNTS_CONCURRENCY = 64;
/** CLI calls at once while creating the accounts: each is a Node start (~0.8 s), mostly waiting. */
const CREATE_PARALLEL = 6;

export interface AccountLoadSummary {
  accounts: number;
  requests: number;
  failures: number;
  failureMessages: string[];
  throughputRps: number;
  roundThroughputRps: number[];
  gatewayCpuMsPerRequest: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** PostgreSQL round trips per request under this load (through the counting relay, one turn). */
  postgresPerRequest: number | null;
  redisPerRequest: number | null;
}

export interface AccountsReport {
  concurrency: number;
  hot: AccountLoadSummary;
  spread: AccountLoadSummary;
  /** hot req/s over spread req/s: 1.0 means no per-account ceiling. */
  hotOverSpread: number;
  /** `tollgate ledger verify` after the loads: every balance equals the sum of its ledger. */
  ledgerVerified: boolean;
  ledgerProblem?: string;
}

export interface AccountsContext {
  directory: string;
  durationMs: number;
  warmupMs: number;
  rounds: number;
  ticksPerSecond: number;
  stop: AbortSignal;
  mockOrigin: string;
  progress(message: string): void;
}

/** 50 accounts with money and a key each, through the CLI as an operator would (the default tier is unlimited in the bench's tollgate.yaml). */
export async function createSpreadKeys(
  context: AccountsContext,
  backend: Backend,
  count = SPREAD_ACCOUNTS,
): Promise<string[]> {
  const env = childEnvironment({ ...backend.env, LOG_LEVEL: 'warn' });
  const cli = (args: string[]) => runCliJson(args, env, context.directory);
  const keys: string[] = new Array<string>(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const email = `bench-spread-${index}@example.com`;
      await cli(['accounts', 'create', '--email', email, '--password', 'bench-password-123']);
      await cli(['credit', '--email', email, '--usd', '1000000', '--note', 'bench']);
      const created = await cli(['keys', 'create', '--email', email, '--name', 'bench']);
      if (typeof created.key !== 'string') throw new Error(`keys create returned no key: ${JSON.stringify(created)}`);
      keys[index] = created.key;
    }
  };
  await Promise.all(Array.from({ length: CREATE_PARALLEL }, worker));
  return keys;
}

const SHAPE: Pick<Scenario, 'stream' | 'paceMs' | 'chunks' | 'promptKiB' | 'concurrency'> = {
  stream: false,
  paceMs: 0,
  chunks: REPLY_CHUNKS,
  promptKiB: 0,
  concurrency: ACCOUNTS_CONCURRENCY,
};

/** Clients of the gateway at `origin`: one per key, so requests rotate over the keys' accounts. */
function clientsFor(origin: string, mockOrigin: string, keys: readonly string[], prefix: string): TargetClient[] {
  const connections = Math.max(1, Math.ceil(ACCOUNTS_CONCURRENCY / keys.length));
  return keys.map(
    (key, index) =>
      new TargetClient(
        targetsFor(ROUTES['same-format'], mockOrigin, origin, key).gateway,
        connections,
        SHAPE,
        `${prefix}${index.toString(36)}x`,
      ),
  );
}

/** `concurrency` workers spread over the clients (worker i uses client i mod n), as one round. */
async function runSpreadRound(
  clients: readonly TargetClient[],
  durationMs: number,
  stop: AbortSignal,
): Promise<RoundResult> {
  const perClient = clients.map(
    (_, index) =>
      Math.floor(ACCOUNTS_CONCURRENCY / clients.length) + (index < ACCOUNTS_CONCURRENCY % clients.length ? 1 : 0),
  );
  const results = await Promise.all(
    clients.map((client, index) =>
      perClient[index]! > 0 ? runRound(client, { concurrency: perClient[index]! }, durationMs, stop) : undefined,
    ),
  );
  const merged = results.filter((result): result is RoundResult => result !== undefined);
  const first = merged[0]!;
  for (const result of merged.slice(1)) {
    first.requests += result.requests;
    first.failures += result.failures;
    first.elapsedMs = Math.max(first.elapsedMs, result.elapsedMs);
    first.latencies.append(result.latencies);
    first.failureMessages.push(...result.failureMessages.slice(0, Math.max(0, 5 - first.failureMessages.length)));
  }
  return first;
}

interface Accumulated {
  requests: number;
  failures: number;
  failureMessages: string[];
  elapsedMs: number;
  ticks: number;
  rounds: number[];
  latencies: number[];
}

function summarise(accounts: number, total: Accumulated, ticksPerSecond: number): AccountLoadSummary {
  const sorted = [...total.latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return {
    accounts,
    requests: total.requests,
    failures: total.failures,
    failureMessages: total.failureMessages,
    throughputRps: (total.requests * 1000) / Math.max(1, total.elapsedMs),
    roundThroughputRps: total.rounds,
    gatewayCpuMsPerRequest: ((total.ticks / ticksPerSecond) * 1000) / Math.max(1, total.requests),
    latencyP50Ms: at(0.5),
    latencyP99Ms: at(0.99),
    postgresPerRequest: null,
    redisPerRequest: null,
  };
}

/** Hot (one key, one account) and spread (50 keys, 50 accounts) loads in alternating turns on `gateway`. */
export async function measureAccounts(
  context: AccountsContext,
  gateway: { gateway: ManagedProcess; origin: string },
  hotKey: string,
  spreadKeys: readonly string[],
): Promise<Omit<AccountsReport, 'ledgerVerified' | 'ledgerProblem'>> {
  const hot = clientsFor(gateway.origin, context.mockOrigin, [hotKey], 'ah');
  const spread = clientsFor(gateway.origin, context.mockOrigin, spreadKeys, 'as');
  const loads = [
    { name: 'hot', clients: hot },
    { name: 'spread', clients: spread },
  ] as const;
  const totals: Record<'hot' | 'spread', Accumulated> = {
    hot: { requests: 0, failures: 0, failureMessages: [], elapsedMs: 0, ticks: 0, rounds: [], latencies: [] },
    spread: { requests: 0, failures: 0, failureMessages: [], elapsedMs: 0, ticks: 0, rounds: [], latencies: [] },
  };
  try {
    for (const load of loads) await runSpreadRound(load.clients, context.warmupMs, context.stop);
    for (let round = 0; round < context.rounds; round++) {
      const order = round % 2 === 0 ? loads : [...loads].reverse();
      const rates: string[] = [];
      for (const load of order) {
        context.stop.throwIfAborted();
        const before = cpuTicks(gateway.gateway.pid);
        const result = await runSpreadRound(load.clients, context.durationMs, context.stop);
        const total = totals[load.name];
        total.ticks += cpuTicks(gateway.gateway.pid) - before;
        total.requests += result.requests;
        total.failures += result.failures;
        total.elapsedMs += result.elapsedMs;
        total.rounds.push((result.requests * 1000) / result.elapsedMs);
        total.latencies.push(...result.latencies.view());
        total.failureMessages.push(...result.failureMessages.slice(0, Math.max(0, 5 - total.failureMessages.length)));
        rates.push(
          `${load.name} ${((result.requests * 1000) / result.elapsedMs).toFixed(0)} req/s${result.failures > 0 ? ` (${result.failures} WRONG)` : ''}`,
        );
      }
      context.progress(`  accounts c${ACCOUNTS_CONCURRENCY} round ${round + 1}/${context.rounds}: ${rates.join(', ')}`);
    }
  } finally {
    for (const client of [...hot, ...spread]) await client.destroy();
  }
  const hotSummary = summarise(1, totals.hot, context.ticksPerSecond);
  const spreadSummary = summarise(spreadKeys.length, totals.spread, context.ticksPerSecond);
  return {
    concurrency: ACCOUNTS_CONCURRENCY,
    hot: hotSummary,
    spread: spreadSummary,
    hotOverSpread: hotSummary.throughputRps / Math.max(1, spreadSummary.throughputRps),
  };
}

/**
 * Round trips per request at concurrency 64: the gateway at `origin` reaches PostgreSQL and Redis through the two
 * relays; each load runs one warm-up and one counted turn.
 */
export async function countAccountRoundTrips(
  context: AccountsContext,
  origin: string,
  relays: { postgres: RoundTripProxy; redis: RoundTripProxy },
  hotKey: string,
  spreadKeys: readonly string[],
): Promise<Record<'hot' | 'spread', { postgres: number; redis: number }>> {
  const counted: Partial<Record<'hot' | 'spread', { postgres: number; redis: number }>> = {};
  for (const [name, keys] of [
    ['hot', [hotKey]],
    ['spread', spreadKeys],
  ] as const) {
    const clients = clientsFor(origin, context.mockOrigin, keys, `ar${name[0]}`);
    try {
      await runSpreadRound(clients, context.warmupMs, context.stop);
      const before = { postgres: relays.postgres.count, redis: relays.redis.count };
      const result = await runSpreadRound(clients, context.durationMs, context.stop);
      if (result.failures > 0)
        throw new Error(`round-trip count, ${name} accounts: ${result.failureMessages.join(' | ')}`);
      counted[name] = {
        postgres: (relays.postgres.count - before.postgres) / Math.max(1, result.requests),
        redis: (relays.redis.count - before.redis) / Math.max(1, result.requests),
      };
    } finally {
      for (const client of clients) await client.destroy();
    }
  }
  return { hot: counted.hot!, spread: counted.spread! };
}

/** `tollgate ledger verify`: exit 1 (a thrown error here) when a balance differs from its ledger. */
export async function verifyLedger(
  context: AccountsContext,
  backend: Backend,
): Promise<{ ledgerVerified: boolean; ledgerProblem?: string }> {
  try {
    await runCliJson(['ledger', 'verify'], childEnvironment({ ...backend.env, LOG_LEVEL: 'warn' }), context.directory);
    return { ledgerVerified: true };
  } catch (error) {
    return { ledgerVerified: false, ledgerProblem: error instanceof Error ? error.message : String(error) };
  }
}

export function formatAccounts(report: AccountsReport): string[] {
  const line = (name: string, summary: AccountLoadSummary) =>
    `  ${name.padEnd(12)} ${summary.throughputRps.toFixed(0).padStart(6)} req/s (rounds ${summary.roundThroughputRps.map((value) => value.toFixed(0)).join(', ')}), ` +
    `CPU ${summary.gatewayCpuMsPerRequest.toFixed(3)} ms/request, p50 ${summary.latencyP50Ms.toFixed(1)} ms, p99 ${summary.latencyP99Ms.toFixed(1)} ms` +
    (summary.postgresPerRequest === null
      ? ''
      : `, PG ${summary.postgresPerRequest.toFixed(2)} / Redis ${(summary.redisPerRequest ?? 0).toFixed(2)} round trips per request`) +
    (summary.failures > 0 ? `, ${summary.failures} WRONG: ${summary.failureMessages.join(' | ')}` : '');
  return [
    `one hot account vs ${report.spread.accounts} accounts, same-format JSON, concurrency ${report.concurrency} (gateway only, alternating turns):`,
    line('1 account', report.hot),
    line(`${report.spread.accounts} accounts`, report.spread),
    `  hot / spread throughput ${report.hotOverSpread.toFixed(2)} (1.00: no per-account ceiling); ledger verify after the loads: ${report.ledgerVerified ? 'ok' : `FAILED: ${report.ledgerProblem ?? ''}`}`,
  ];
}
