/**
 * `npm run bench`: the gateway's own cost, measured against the issue's targets. A small mock upstream of
 * the bench's own (bench/mock-upstream.ts) answers both vendor protocols; every scenario calls it directly
 * and through the gateway in alternating turns inside every round (direct first in even rounds, gateway
 * first in odd ones), so a noisy neighbour or a CPU frequency change hits both alike. The gateway runs
 * alone on core 0, the mock and this load generator on core 1 (see pinning.ts).
 *
 * Once per bench run (with the first backend measured, SQLite by default) the same-format scenarios marked
 * `floor` also call the floor proxy (bench/floor-proxy.ts: a bare Node pass-through, on the gateway's core)
 * in the same rounds, so the gateway's cost can be stated as a multiple of the least a Node proxy costs here.
 *
 * Progress goes to stderr; the report goes to stdout and the JSON record to bench/results/latest.json
 * (or --out).
 */
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  countAccountRoundTrips,
  createSpreadKeys,
  measureAccounts,
  verifyLedger,
  type AccountsContext,
  type AccountsReport,
} from './accounts.js';
import { postgresBackend, sqliteBackend, type Backend } from './backends.js';
import {
  assertAlive,
  createAccountKey,
  PROFILE_STOP_GRACE_MS,
  prepare,
  progress,
  startFloor,
  startGateway,
  warmTarget,
  warmUp,
  type Context,
  type Floor,
} from './bench-context.js';
import { formatC10k } from './c10k.js';
import { benchC10k } from './c10k-run.js';
import { Cleanup } from './cleanup.js';
import { benchInstructions } from './instruction-run.js';
import { benchSoak } from './soak-run.js';
import { measureHeapSizingSaving } from './heap-probe.js';
import { benchScaleOut, formatScaleOut } from './scale-out.js';
import { formatInstructionCounts } from './instruction-count.js';
import { measureLimiterCost } from './limiter-cost.js';
import { machineNoise, sampleCpu } from './machine-noise.js';
import { runRound, TargetClient } from './load.js';
import { ScenarioMeasurements, type RoundMeasurement, type ScenarioSummary } from './measurements.js';
import { OptionsError, parseBenchOptions, USAGE, type BenchOptions } from './options.js';
import { cpusAllowed, cpuTicks, memory, resetPeakRss, type ManagedProcess } from './processes.js';
import { formatReport, writeReport, type BenchReport } from './report.js';
import { describePostgresMessage, RoundTripProxy } from './round-trip-proxy.js';
import { formatSoak } from './soak.js';
import {
  MAX_CONCURRENCY,
  ROUTES,
  SCENARIOS,
  SHAPE_SCENARIOS,
  scenarioPicked,
  targetsFor,
  withUpstreamMode,
  type Route,
  type Scenario,
} from './scenarios.js';
import { judgeTargets, type BackendRun, type RoundTripKind, type RoundTripReport } from './targets.js';

const RESULTS_PATH = fileURLToPath(new URL('../../bench/results/latest.json', import.meta.url));
/** Let start-up garbage settle before reading the RSS after start-up. */
const IDLE_SETTLE_MS = 1_000;
/**
 * The gateway's own round trips with no request running (the alert deliveries' poll every 2 s, the catalog's every
 * 5 s, the sweeper), counted this long: their rate is taken off the requests' counts, which are per request.
 */
const IDLE_ROUND_TRIPS_MS = 10_000;
/**
 * Idle long enough for V8's memory reducer, which shrinks an idle heap ~8 s after allocation stops: the RSS of a
 * gateway at rest, rather than of one that has just finished starting.
 */
const IDLE_MEMORY_SETTLE_MS = 12_000;
/**
 * After the load: the SQLite checkpoint thread stops 10-20 s after the last write (wal-checkpointer.ts), then the
 * memory reducer's ~8 s. Skipped with --quick.
 */
const IDLE_AFTER_LOAD_MS = 32_000;
/** Work a request may finish after its reply was read (settlement written after the last byte). */
const SETTLEMENT_TAIL_MS = 100;
const INSTRUCTIONS_PATH = fileURLToPath(new URL('../../bench/results/instructions.json', import.meta.url));
const SOAK_PATH = fileURLToPath(new URL('../../bench/results/soak.json', import.meta.url));
const C10K_PATH = fileURLToPath(new URL('../../bench/results/c10k.json', import.meta.url));
const SCALE_OUT_PATH = fileURLToPath(new URL('../../bench/results/scale-out.json', import.meta.url));

/** One target's turn; `proxy` is the process behind the target whose CPU is read (the gateway for direct turns). */
async function measuredTurn(
  client: TargetClient,
  scenario: Scenario,
  round: number,
  proxy: ManagedProcess,
  children: readonly ManagedProcess[],
  context: Context,
): Promise<RoundMeasurement> {
  assertAlive(children);
  const proxyBefore = cpuTicks(proxy.pid);
  const mockBefore = cpuTicks(context.mock.pid);
  const clientBefore = process.cpuUsage();
  const result = await runRound(client, scenario, context.options.durationMs, context.stop);
  const clientUsed = process.cpuUsage(clientBefore);
  context.stop.throwIfAborted();
  assertAlive(children);
  return {
    round,
    result,
    proxyCpuTicks: cpuTicks(proxy.pid) - proxyBefore,
    mockCpuTicks: cpuTicks(context.mock.pid) - mockBefore,
    clientCpuMicros: clientUsed.user + clientUsed.system,
  };
}

async function runScenario(
  context: Context,
  scenario: Scenario,
  index: number,
  backend: Backend,
  gateway: { gateway: ManagedProcess; origin: string },
  key: string,
  floor: Floor | null,
): Promise<ScenarioSummary> {
  const measureFloor = floor !== null && scenario.floor;
  const targets = targetsFor(
    scenario.route,
    context.mockOrigin,
    gateway.origin,
    key,
    measureFloor ? floor.origin : undefined,
  );
  // Nonces unique across the run: backend, scenario and target in the prefix, a counter after it.
  const prefix = `${backend.name[0]}${index.toString(36)}`;
  const direct = new TargetClient(targets.direct, scenario.concurrency, scenario, `${prefix}d`);
  const viaGateway = new TargetClient(targets.gateway, scenario.concurrency, scenario, `${prefix}g`);
  const viaFloor =
    targets.floor === undefined
      ? undefined
      : new TargetClient(targets.floor, scenario.concurrency, scenario, `${prefix}f`);
  const clients = viaFloor === undefined ? [direct, viaGateway] : [direct, viaGateway, viaFloor];
  const children = [gateway.gateway, context.mock, ...(measureFloor ? [floor.floor] : [])];
  const proxyOf = (client: TargetClient): ManagedProcess =>
    client === viaFloor && floor !== null ? floor.floor : gateway.gateway;
  try {
    // One request each first: a broken set-up fails in a second, with the reason, not after minutes.
    for (const client of clients) {
      const outcome = await client.send();
      if (!outcome.ok)
        throw new Error(`${scenario.id}: first request to ${client.target.name} failed: ${outcome.problem}`);
    }
    if (scenario.paceMs > 0 && (context.options.warmupMs > 0 || context.options.warmupRequests > 0)) {
      // Paced scenarios judge the tail of the time to first token, which the JIT's catching up shows in: by
      // the shapes' paced scenarios the scenarios before them (large JSON prompts) have run enough full
      // collections for V8 to flush the stream path's unused bytecode and optimised code (`--bytecode-old-age`),
      // and the paced scenario's measured turns recompiled it (~20-70 Turbofan jobs per 1.5 s turn, on the
      // gateway's own core). A gateway serving steady traffic has that code ready, so each proxy gets the
      // start-up warm-up again on this route and reply kind (unpaced: thousands of requests in seconds).
      for (const [position, client] of clients.entries()) {
        if (client !== direct) await warmTarget(context, client.target, scenario.stream, `${prefix}w${position}`);
      }
    }
    if (context.options.warmupMs > 0) {
      for (const client of clients) await runRound(client, scenario, context.options.warmupMs, context.stop);
      context.stop.throwIfAborted();
    }
    const measurements = new ScenarioMeasurements(scenario);
    for (let round = 0; round < context.options.rounds; round++) {
      // Forwards in even rounds, backwards in odd ones: every target sits at each position equally often.
      const order = round % 2 === 0 ? clients : [...clients].reverse();
      const rates: string[] = [];
      for (const client of order) {
        const turn = await measuredTurn(client, scenario, round, proxyOf(client), children, context);
        measurements.add(turn);
        const { requests, failures, elapsedMs } = turn.result;
        rates.push(
          `${client.target.name} ${((requests * 1000) / elapsedMs).toFixed(0)} req/s${failures > 0 ? ` (${failures} WRONG)` : ''}`,
        );
      }
      progress(`  ${scenario.id} round ${round + 1}/${context.options.rounds}: ${rates.join(', ')}`);
    }
    return measurements.summary(context.ticksPerSecond);
  } finally {
    for (const client of clients) await client.destroy();
  }
}

/** The route kinds whose database and Redis round trips are counted, one request at a time. */
const ROUND_TRIP_KINDS: readonly { kind: string; route: Route; stream: boolean }[] = [
  { kind: 'same-format-json', route: ROUTES['same-format'], stream: false },
  { kind: 'same-format-stream', route: ROUTES['same-format'], stream: true },
  { kind: 'openai-to-anthropic-json', route: ROUTES['openai-to-anthropic'], stream: false },
];

/**
 * Slices of output asked for over the run, and API requests served, from the gateway's own /metrics (undefined
 * when it cannot be read, e.g. behind METRICS_TOKEN): a slice is one storage call beyond admission and settlement.
 */
async function countSlices(origin: string): Promise<{ requests: number; slices: number } | undefined> {
  try {
    const response = await fetch(`${origin}/metrics`);
    if (!response.ok) return undefined;
    const text = await response.text();
    const sum = (series: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith(`${series}{`))
        .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    return { requests: sum('tollgate_http_requests_total'), slices: sum('tollgate_output_slices_total') };
  } catch {
    return undefined;
  }
}

/**
 * Round trips per request: a second gateway on the same database, reaching PostgreSQL and Redis through
 * counting relays (round-trip-proxy.ts). Sequential requests, so each count belongs to one request.
 */
async function countRoundTrips(
  context: Context,
  backend: Backend & Required<Pick<Backend, 'envThrough' | 'postgres' | 'redis'>>,
  key: string,
): Promise<RoundTripReport> {
  const postgres = await RoundTripProxy.start(backend.postgres.host, backend.postgres.port);
  const redis = await RoundTripProxy.start(backend.redis.host, backend.redis.port);
  const started = await startGateway(
    context,
    `${backend.name}-round-trips`,
    backend.envThrough(postgres.port, redis.port),
    false,
  );
  try {
    await delay(IDLE_SETTLE_MS);
    const idleStart = { postgres: postgres.count, redis: redis.count, at: performance.now() };
    await delay(IDLE_ROUND_TRIPS_MS);
    const idleSeconds = (performance.now() - idleStart.at) / 1000;
    const idle = {
      postgres: (postgres.count - idleStart.postgres) / idleSeconds,
      redis: (redis.count - idleStart.redis) / idleSeconds,
    };
    const kinds: RoundTripKind[] = [];
    for (const [index, each] of ROUND_TRIP_KINDS.entries()) {
      const targets = targetsFor(each.route, context.mockOrigin, started.origin, key);
      const client = new TargetClient(
        targets.gateway,
        1,
        { stream: each.stream, paceMs: 0 },
        `${backend.name[0]}r${index}`,
      );
      try {
        // The first request may open pool connections; count from the second on.
        const first = await client.send();
        if (!first.ok) throw new Error(`round-trip count, ${each.kind}: ${first.problem}`);
        const before = { postgres: postgres.count, redis: redis.count, at: performance.now() };
        for (let i = 0; i < context.options.roundTripRequests; i++) {
          context.stop.throwIfAborted();
          const outcome = await client.send();
          if (!outcome.ok) throw new Error(`round-trip count, ${each.kind}: ${outcome.problem}`);
        }
        const requests = context.options.roundTripRequests;
        const seconds = (performance.now() - before.at) / 1000;
        const postgresCounted = (postgres.count - before.postgres) / requests;
        const postgresPerRequest = Math.max(0, postgresCounted - (idle.postgres * seconds) / requests);
        const redisPerRequest = Math.max(0, (redis.count - before.redis - idle.redis * seconds) / requests);
        postgres.record(describePostgresMessage);
        const traced = await client.send();
        if (!traced.ok) throw new Error(`round-trip count, ${each.kind}: ${traced.problem}`);
        await delay(SETTLEMENT_TAIL_MS);
        kinds.push({
          kind: each.kind,
          requests,
          postgresPerRequest,
          postgresCountedPerRequest: postgresCounted,
          redisPerRequest,
          postgresStatements: postgres.takeRecording(),
        });
      } finally {
        await client.destroy();
      }
    }
    return { kinds, idlePostgresPerSecond: idle.postgres, idleRedisPerSecond: idle.redis };
  } finally {
    await started.gateway.stop();
    await postgres.close();
    await redis.close();
  }
}

function accountsContext(context: Context): AccountsContext {
  const { options } = context;
  return {
    directory: context.directory,
    durationMs: options.durationMs,
    warmupMs: Math.max(options.warmupMs, 300),
    rounds: options.rounds,
    ticksPerSecond: context.ticksPerSecond,
    stop: context.stop,
    mockOrigin: context.mockOrigin,
    progress,
  };
}

/**
 * `--accounts` on PostgreSQL (accounts.ts): the hot and spread loads on the measured gateway, then their round trips
 * per request through the counting relays on a second gateway, then `ledger verify`.
 */
async function benchAccounts(
  context: Context,
  backend: Backend & Required<Pick<Backend, 'envThrough' | 'postgres' | 'redis'>>,
  started: { gateway: ManagedProcess; origin: string },
  hotKey: string,
  spreadKeys: readonly string[],
): Promise<Omit<AccountsReport, 'ledgerVerified' | 'ledgerProblem'>> {
  const accounts = accountsContext(context);
  progress(`== ${backend.label}: one hot account vs ${spreadKeys.length} accounts`);
  const measured = await measureAccounts(accounts, started, hotKey, spreadKeys);
  return measured;
}

async function countAccountsRoundTrips(
  context: Context,
  backend: Backend & Required<Pick<Backend, 'envThrough' | 'postgres' | 'redis'>>,
  report: Omit<AccountsReport, 'ledgerVerified' | 'ledgerProblem'>,
  hotKey: string,
  spreadKeys: readonly string[],
): Promise<AccountsReport> {
  progress(`== ${backend.label}: round trips per request at concurrency ${report.concurrency}, hot and spread`);
  const postgres = await RoundTripProxy.start(backend.postgres.host, backend.postgres.port);
  const redis = await RoundTripProxy.start(backend.redis.host, backend.redis.port);
  const started = await startGateway(
    context,
    `${backend.name}-accounts-round-trips`,
    backend.envThrough(postgres.port, redis.port),
    false,
  );
  try {
    const counted = await countAccountRoundTrips(
      accountsContext(context),
      started.origin,
      { postgres, redis },
      hotKey,
      spreadKeys,
    );
    report.hot.postgresPerRequest = counted.hot.postgres;
    report.hot.redisPerRequest = counted.hot.redis;
    report.spread.postgresPerRequest = counted.spread.postgres;
    report.spread.redisPerRequest = counted.spread.redis;
  } finally {
    await started.gateway.stop();
    await postgres.close();
    await redis.close();
  }
  await delay(SETTLEMENT_TAIL_MS);
  return { ...report, ...(await verifyLedger(accountsContext(context), backend)) };
}

async function benchBackend(
  context: Context,
  backend: Backend,
  scenarios: readonly Scenario[],
  withFloor: boolean,
): Promise<BackendRun> {
  progress(
    `== ${backend.label}: creating the account and key, starting the gateway${withFloor ? ' and the floor proxy' : ''}`,
  );
  const key = await createAccountKey(context, backend);
  const accountsBackend =
    context.options.accounts &&
    backend.envThrough !== undefined &&
    backend.postgres !== undefined &&
    backend.redis !== undefined
      ? { ...backend, envThrough: backend.envThrough, postgres: backend.postgres, redis: backend.redis }
      : undefined;
  if (accountsBackend !== undefined) progress(`== ${backend.label}: creating the --accounts mode's accounts and keys`);
  const spreadKeys = accountsBackend === undefined ? [] : await createSpreadKeys(accountsContext(context), backend);
  const started = await startGateway(context, `gateway-${backend.name}`, backend.env, true);
  const floor = withFloor ? await startFloor(context) : null;
  const { gateway } = started;
  await delay(IDLE_SETTLE_MS);
  const afterStart = memory(gateway.pid);
  progress(
    `== ${backend.label}: letting the gateway idle ${IDLE_MEMORY_SETTLE_MS / 1000} s before reading its idle RSS`,
  );
  await delay(IDLE_MEMORY_SETTLE_MS - IDLE_SETTLE_MS);
  const idle = memory(gateway.pid);
  progress(`== ${backend.label}: warming the gateway${floor === null ? '' : ' and the floor proxy'} up`);
  const gatewayTargets = Object.values(ROUTES).map(
    (route) => targetsFor(route, context.mockOrigin, started.origin, key).gateway,
  );
  await warmUp(context, gatewayTargets, `${backend.name[0]}w`);
  // The floor gets the same warm-up, or its first scenario would pay for compiling its (short) hot path.
  const floorTarget =
    floor === null
      ? undefined
      : targetsFor(ROUTES['same-format'], context.mockOrigin, started.origin, key, floor.origin).floor;
  if (floorTarget !== undefined) await warmUp(context, [floorTarget], `${backend.name[0]}x`);
  // The banner is behind us: from here on, any line the gateway writes (at LOG_LEVEL=warn) is news.
  gateway.markOutput();
  const benchPids = [process.pid, context.mock.pid, gateway.pid, ...(floor === null ? [] : [floor.floor.pid])];
  const cpuBefore = sampleCpu(benchPids);
  const summaries: ScenarioSummary[] = [];
  let peakRssKiB: number | null = null;
  let peakRssScope: BackendRun['peakRssScope'] = 'whole run';
  let floorPeakRssKiB: number | null = null;
  for (const [index, scenario] of scenarios.entries()) {
    const peakScenario = scenario.concurrency === MAX_CONCURRENCY;
    if (peakScenario && resetPeakRss(gateway.pid)) peakRssScope = 'concurrency-128 scenario';
    // The floor's peak over the same scenario: the target is a multiple of it (both run the same Node and flags).
    const floorPeak = peakScenario && floor !== null && scenario.floor && resetPeakRss(floor.floor.pid);
    summaries.push(await runScenario(context, scenario, index, backend, started, key, floor));
    if (peakScenario) peakRssKiB = memory(gateway.pid).peakRssKiB;
    if (floorPeak) floorPeakRssKiB = memory(floor.floor.pid).peakRssKiB;
  }
  const accounts =
    accountsBackend === undefined ? undefined : await benchAccounts(context, accountsBackend, started, key, spreadKeys);
  const noise =
    summaries.length === 0
      ? null
      : machineNoise(cpuBefore, sampleCpu(benchPids), context.ticksPerSecond, cpus().length);
  const slices = await countSlices(started.origin);
  const end = memory(gateway.pid);
  let idleAfterLoad: number | null = null;
  if (!context.options.quick && summaries.length > 0) {
    progress(`== ${backend.label}: letting the gateway idle ${IDLE_AFTER_LOAD_MS / 1000} s after the load`);
    await delay(IDLE_AFTER_LOAD_MS);
    idleAfterLoad = memory(gateway.pid).rssKiB;
  }
  const run: BackendRun = {
    backend: backend.name,
    label: backend.label,
    scenarios: summaries,
    gatewayCpusAllowed: cpusAllowed(gateway.pid),
    startRssKiB: afterStart.rssKiB,
    idleRssKiB: idle.rssKiB,
    idleAfterLoadRssKiB: idleAfterLoad,
    peakRssKiB: peakRssKiB ?? (peakRssScope === 'whole run' && summaries.length > 0 ? end.peakRssKiB : null),
    peakRssScope,
    floorPeakRssKiB: peakRssScope === 'concurrency-128 scenario' ? floorPeakRssKiB : null,
    endRssKiB: end.rssKiB,
    roundTrips: null,
    ...(slices === undefined ? {} : { slices }),
    noise,
    gatewayOutputLines: gateway.linesSinceMark(),
    gatewayOutputTail:
      gateway.linesSinceMark() === 0 ? [] : gateway.outputTail().slice(-Math.min(10, gateway.linesSinceMark())),
  };
  for (const child of floor === null ? [gateway] : [gateway, floor.floor]) {
    await child.stop(context.options.cpuProfileDir === undefined ? undefined : PROFILE_STOP_GRACE_MS);
    if (context.options.cpuProfileDir !== undefined) {
      progress(
        `CPU profile of ${child.name} in ${join(context.options.cpuProfileDir, child.name)}; summarise it with node dist/bench/summarize-cpu-profile.js FILE`,
      );
    }
  }
  if (backend.envThrough !== undefined && backend.postgres !== undefined && backend.redis !== undefined) {
    progress(`== ${backend.label}: counting round trips per request`);
    run.roundTrips = await countRoundTrips(
      context,
      { ...backend, envThrough: backend.envThrough, postgres: backend.postgres, redis: backend.redis },
      key,
    );
  }
  if (accountsBackend !== undefined && accounts !== undefined)
    run.accounts = await countAccountsRoundTrips(context, accountsBackend, accounts, key, spreadKeys);
  return run;
}

async function bench(options: BenchOptions, cleanup: Cleanup, stop: AbortSignal): Promise<BenchReport> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg()[0] ?? 0;
  const context = await prepare(options, cleanup, stop);
  const { pinning, directory, mock } = context;

  const all = options.shapes ? [...SCENARIOS, ...SHAPE_SCENARIOS] : SCENARIOS;
  const scenarios = withUpstreamMode(
    all.filter((scenario) => scenarioPicked(scenario.id, options.scenarioFilter)),
    options.upstream,
    options.upstreamPaceMs,
  );
  if (scenarios.length === 0 && !options.accounts)
    throw new OptionsError(`--scenarios matched none of: ${all.map((scenario) => scenario.id).join(', ')}`);

  const runs: BackendRun[] = [];
  for (const name of options.backends) {
    const backend = name === 'sqlite' ? sqliteBackend(directory) : await postgresBackend();
    if (typeof backend === 'string') {
      progress(`== PostgreSQL + Redis skipped: ${backend}`);
      runs.push(skippedRun(backend));
      continue;
    }
    cleanup.closeLater(() => backend.drop());
    // The floor does not depend on the backend: measured once, with the first backend measured.
    const withFloor = !runs.some((run) => run.skipped === undefined) && scenarios.some((scenario) => scenario.floor);
    runs.push(await benchBackend(context, backend, scenarios, withFloor));
  }

  const limiterCost = await measureLimiterCost();
  progress('== old-space sizing: churn probes with and without it, one after another');
  const heapSizing = await measureHeapSizingSaving();
  // Loaded only for --otel: a run without it never has the SDK in the bench process.
  const telemetryCost = options.otel ? await (await import('./telemetry-cost.js')).measureTelemetryCost() : undefined;
  const targets = judgeTargets(runs);
  const cpu = cpus();
  const measured = targets.flatMap((row) => Object.values(row.values)).filter((value) => value.pass !== null);
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    responsesCorrect: runs.every((run) => run.scenarios.every((scenario) => !scenario.failed)),
    targetsMet: measured.length > 0 && measured.every((value) => value.pass === true),
    options,
    environment: {
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpuModel: cpu[0]?.model.trim() ?? 'unknown',
      cpuCount: cpu.length,
      loadAverageAtStart,
      clockTicksPerSecond: context.ticksPerSecond,
      pinning: pinning.description,
      benchCpusAllowed: cpusAllowed(process.pid),
      mockCpusAllowed: cpusAllowed(mock.pid),
    },
    targets,
    backends: runs,
    limiterCost,
    ...(telemetryCost === undefined ? {} : { telemetryCost }),
    heapSizing,
    mockOutputTail: mock.outputTail(),
  };
}

function skippedRun(reason: string): BackendRun {
  return {
    backend: 'postgres',
    label: 'PostgreSQL + Redis',
    skipped: reason,
    scenarios: [],
    gatewayCpusAllowed: '-',
    startRssKiB: 0,
    idleRssKiB: 0,
    idleAfterLoadRssKiB: null,
    peakRssKiB: null,
    peakRssScope: 'whole run',
    floorPeakRssKiB: null,
    endRssKiB: 0,
    roundTrips: null,
    noise: null,
    gatewayOutputLines: 0,
    gatewayOutputTail: [],
  };
}

async function main(argv: readonly string[]): Promise<number> {
  let options: BenchOptions | undefined;
  try {
    options = parseBenchOptions(argv);
  } catch (error) {
    if (!(error instanceof OptionsError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`bench: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (options === undefined) {
    process.stdout.write(USAGE);
    return 0;
  }

  const cleanup = new Cleanup();
  const stop = new AbortController();
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => {
      progress(`\n${signal}: stopping the load, the mock and the gateway, removing the temp dir`);
      // Load first: workers stop starting requests, so nothing races the shutdown below.
      stop.abort(new Error(`interrupted by ${signal}`));
      void cleanup.run().finally(() => process.exit(code));
    });
  }
  try {
    if (options.callgrind) {
      const record = await benchInstructions(options, cleanup, stop.signal);
      const path = options.out ?? INSTRUCTIONS_PATH;
      writeReport(path, record);
      process.stdout.write(
        record.skipped === undefined
          ? `${formatInstructionCounts(record.counts)}\n`
          : `instruction counts skipped: ${record.skipped}\n`,
      );
      progress(`results written to ${path}`);
      return 0;
    }
    if (options.c10k !== undefined) {
      const record = await benchC10k(options, options.c10k, cleanup, stop.signal);
      const path = options.out ?? C10K_PATH;
      writeReport(path, record);
      process.stdout.write(formatC10k(record));
      progress(`results written to ${path}`);
      return record.results.some((result) => result.failures > 0) ? 1 : 0;
    }
    if (options.instances !== undefined) {
      const record = await benchScaleOut(options, options.instances, cleanup, stop.signal);
      const path = options.out ?? SCALE_OUT_PATH;
      writeReport(path, record);
      process.stdout.write(formatScaleOut(record));
      progress(`results written to ${path}`);
      return record.results.some((result) => result.failures > 0) ? 1 : 0;
    }
    if (options.soakSeconds !== undefined) {
      const record = await benchSoak(options, options.soakSeconds, cleanup, stop.signal);
      const path = options.out ?? SOAK_PATH;
      writeReport(path, record);
      process.stdout.write(formatSoak(record));
      progress(`results written to ${path}`);
      return record.failures > 0 ? 1 : 0;
    }
    const report = await bench(options, cleanup, stop.signal);
    const path = options.out ?? RESULTS_PATH;
    writeReport(path, report);
    process.stdout.write(formatReport(report));
    progress(`results written to ${path}`);
    if (!report.responsesCorrect) return 1;
    return options.strict && !report.targetsMet ? 1 : 0;
  } catch (error) {
    if (stop.signal.aborted) return 1; // the signal handler reports and exits
    // What the run was asked cannot be done here (no scenario matched, too few open files): the reason is enough.
    if (error instanceof OptionsError) {
      process.stderr.write(`bench: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  } finally {
    await cleanup.run();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench failed: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
