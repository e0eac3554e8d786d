import { writeFile } from 'node:fs/promises';
/**
 * `npm run bench`: the gateway's own overhead, measured as the difference between calling the vendor
 * simulator directly and calling it through the gateway, with the same requests.
 *
 * Both targets run in alternating turns inside every round (direct first in even rounds, gateway first in
 * odd ones), so a noisy neighbour or a CPU frequency change hits both alike. Progress goes to stderr; the
 * tables go to stdout and the JSON record to bench/results/latest.json.
 */
import { mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cleanup } from './cleanup.js';
import { measureLimiterCost } from './limiter-cost.js';
import { runRound, TargetClient, type RoundResult } from './load.js';
import { ScenarioMeasurements, type RoundMeasurement, type ScenarioSummary } from './measurements.js';
import { OptionsError, parseBenchOptions, USAGE, type BenchOptions } from './options.js';
import {
  childEnvironment,
  clockTicksPerSecond,
  cpuTicks,
  freePort,
  memory,
  runCliJson,
  simulatorAddress,
  startProcess,
  waitForHealthy,
  type ManagedProcess,
} from './processes.js';
import { formatReport, writeReport, type BenchReport } from './report.js';
import { MAX_CONCURRENCY, SCENARIOS, type Scenario, type Target } from './scenarios.js';

const RESULTS_PATH = fileURLToPath(new URL('../../bench/results/latest.json', import.meta.url));
const EMAIL = 'bench@example.com';
const PASSWORD = 'bench-password-123';
const KIB_PER_MIB = 1024;

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

const BENCH_TIER = 'bench';

interface Services {
  simulator: ManagedProcess;
  gateway: ManagedProcess;
  direct: Target;
  viaGateway: Target;
}

/** Temp database, account and key, then the simulator and the gateway, each waited on until it answers. */
async function startServices(directory: string, cleanup: Cleanup): Promise<Services> {
  const databaseUrl = `sqlite:${join(directory, 'bench.db')}`;
  // Every process runs in the temp dir, so this tollgate.yaml configures them all: a tier far above what one
  // run sends, so the bench measures the limiter's cost without being refused by it.
  await writeFile(join(directory, 'tollgate.yaml'), `tiers:\n  ${BENCH_TIER}:\n    requestsPerMinute: 1000000000\n`);
  const setupEnv = childEnvironment({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' });
  await runCliJson(['accounts', 'create', '--email', EMAIL, '--password', PASSWORD], setupEnv, directory);
  await runCliJson(['accounts', 'tier', '--email', EMAIL, '--tier', BENCH_TIER], setupEnv, directory);
  // Billing stays on (admission and settlement are part of what is measured); the balance covers any run.
  await runCliJson(['credit', '--email', EMAIL, '--usd', '1000000', '--note', 'bench'], setupEnv, directory);
  const created = await runCliJson(['keys', 'create', '--email', EMAIL, '--name', 'bench'], setupEnv, directory);
  if (typeof created.key !== 'string') throw new Error(`keys create returned no key: ${JSON.stringify(created)}`);

  // Port 0: the simulator picks a free port itself and reports it, so there is no race for it.
  const simulator = startProcess('simulator', ['simulator', '--port', '0', '--host', '127.0.0.1', '--json'], childEnvironment({}), directory);
  cleanup.stopProcess(simulator);
  const address = await simulatorAddress(simulator);
  const openaiBase = new URL(address.openaiBaseUrl);

  const port = await freePort();
  const gatewayEnv = childEnvironment({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    OPENAI_BASE_URL: address.openaiBaseUrl,
    LOG_LEVEL: 'warn',
  });
  const gateway = startProcess('gateway', ['serve'], gatewayEnv, directory);
  cleanup.stopProcess(gateway);
  const gatewayOrigin = `http://127.0.0.1:${port}`;
  await waitForHealthy(`${gatewayOrigin}/healthz`, gateway);

  return {
    simulator,
    gateway,
    direct: {
      name: 'direct',
      origin: openaiBase.origin,
      path: `${openaiBase.pathname.replace(/\/+$/, '')}/chat/completions`,
      model: 'gpt-5.4',
      apiKey: 'sk-bench-direct',
    },
    viaGateway: { name: 'gateway', origin: gatewayOrigin, path: '/v1/chat/completions', model: 'beta-5.4', apiKey: created.key },
  };
}

/** One request of each kind per target: a broken setup fails in a second, with the reason, not after minutes. */
async function sanityCheck(clients: readonly TargetClient[]): Promise<void> {
  for (const client of clients) {
    for (const stream of [false, true]) {
      const outcome = await client.send(stream);
      if (!outcome.ok) {
        throw new Error(`Sanity request to ${client.target.name} (${stream ? 'stream' : 'non-stream'}) failed: ${outcome.problem}`);
      }
    }
  }
}

async function warmUp(clients: readonly TargetClient[], options: BenchOptions, stop: AbortSignal): Promise<void> {
  if (options.warmupMs === 0) return;
  const shapes = SCENARIOS.filter((scenario) => scenario.concurrency === MAX_CONCURRENCY);
  for (const client of clients) {
    for (const scenario of shapes) {
      const result = await runRound(client, scenario, options.warmupMs, stop);
      stop.throwIfAborted();
      progress(`warm-up ${client.target.name} ${scenario.id}: ${result.requests} requests, ${result.failures} failed`);
      if (result.failures > 0) progress(`  warning: ${result.failureMessages.join(' | ')}`);
    }
  }
}

/** A child that died mid-run is the news, not the /proc read or the failed requests that follow from it. */
function assertAlive(services: Services): void {
  for (const child of [services.gateway, services.simulator]) {
    if (!child.running) throw new Error(`The ${child.name} ${child.exitDescription()} during the run. Its last output:\n${child.outputTail().join('\n')}`);
  }
}

/** One target's turn, with the CPU each process spent during it. */
async function measuredTurn(
  client: TargetClient,
  scenario: Scenario,
  round: number,
  services: Services,
  options: BenchOptions,
  stop: AbortSignal,
): Promise<RoundMeasurement> {
  assertAlive(services);
  const gatewayBefore = cpuTicks(services.gateway.pid);
  const simulatorBefore = cpuTicks(services.simulator.pid);
  const clientBefore = process.cpuUsage();
  const result: RoundResult = await runRound(client, scenario, options.durationMs, stop);
  const clientUsed = process.cpuUsage(clientBefore);
  stop.throwIfAborted();
  assertAlive(services);
  return {
    round,
    result,
    gatewayCpuTicks: cpuTicks(services.gateway.pid) - gatewayBefore,
    simulatorCpuTicks: cpuTicks(services.simulator.pid) - simulatorBefore,
    clientCpuMicros: clientUsed.user + clientUsed.system,
  };
}

async function runScenario(
  scenario: Scenario,
  clients: { direct: TargetClient; gateway: TargetClient },
  services: Services,
  options: BenchOptions,
  ticksPerSecond: number,
  stop: AbortSignal,
): Promise<ScenarioSummary> {
  const measurements = new ScenarioMeasurements(scenario);
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? [clients.direct, clients.gateway] : [clients.gateway, clients.direct];
    const rates: string[] = [];
    for (const client of order) {
      const turn = await measuredTurn(client, scenario, round, services, options, stop);
      measurements.add(turn);
      const { requests, failures, elapsedMs } = turn.result;
      rates.push(`${client.target.name} ${((requests * 1000) / elapsedMs).toFixed(0)} req/s${failures > 0 ? ` (${failures} FAILED)` : ''}`);
    }
    progress(`${scenario.id} round ${round + 1}/${options.rounds}: ${rates.join(', ')}`);
  }
  return measurements.summary(ticksPerSecond);
}

async function bench(options: BenchOptions, cleanup: Cleanup, stop: AbortSignal): Promise<BenchReport> {
  const startedAt = new Date();
  const loadAverageAtStart = loadavg()[0] ?? 0;
  const ticksPerSecond = clockTicksPerSecond();
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  cleanup.removeDirectory(directory);

  progress(`starting simulator and gateway (temp dir ${directory})`);
  const services = await startServices(directory, cleanup);
  const idle = memory(services.gateway.pid);
  // The banner is behind us: from here on, any line either process writes is news.
  services.gateway.markOutput();
  services.simulator.markOutput();

  const clients = {
    direct: new TargetClient(services.direct, MAX_CONCURRENCY, options.replyWords),
    gateway: new TargetClient(services.viaGateway, MAX_CONCURRENCY, options.replyWords),
  };
  cleanup.closeLater(() => clients.direct.destroy());
  cleanup.closeLater(() => clients.gateway.destroy());

  await sanityCheck([clients.direct, clients.gateway]);
  await warmUp([clients.direct, clients.gateway], options, stop);

  const scenarios: ScenarioSummary[] = [];
  for (const scenario of SCENARIOS) scenarios.push(await runScenario(scenario, clients, services, options, ticksPerSecond, stop));

  const end = memory(services.gateway.pid);
  const limiterCost = await measureLimiterCost();
  const cpu = cpus();
  return {
    limiterCost,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    passed: scenarios.every((scenario) => !scenario.failed),
    options,
    environment: {
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpuModel: cpu[0]?.model.trim() ?? 'unknown',
      cpuCount: cpu.length,
      loadAverageAtStart,
      clockTicksPerSecond: ticksPerSecond,
    },
    scenarios,
    gatewayProcess: {
      idleRssMiB: idle.rssKiB / KIB_PER_MIB,
      endRssMiB: end.rssKiB / KIB_PER_MIB,
      peakRssMiB: end.peakRssKiB / KIB_PER_MIB,
      outputLinesDuringRun: services.gateway.linesSinceMark(),
      outputTail: services.gateway.linesSinceMark() === 0 ? [] : services.gateway.outputTail().slice(-Math.min(10, services.gateway.linesSinceMark())),
    },
    simulatorProcess: {
      outputLinesDuringRun: services.simulator.linesSinceMark(),
      outputTail: services.simulator.linesSinceMark() === 0 ? [] : services.simulator.outputTail().slice(-Math.min(10, services.simulator.linesSinceMark())),
    },
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
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      progress(`\n${signal}: stopping the load, the simulator and the gateway, removing the temp dir`);
      // Load first: workers stop starting requests, so nothing races the shutdown below.
      stop.abort(new Error(`interrupted by ${signal}`));
      void cleanup.run().finally(() => process.exit(code));
    });
  }
  try {
    const report = await bench(options, cleanup, stop.signal);
    writeReport(RESULTS_PATH, report);
    process.stdout.write(formatReport(report));
    progress(`results written to ${RESULTS_PATH}`);
    return report.passed ? 0 : 1;
  } catch (error) {
    if (stop.signal.aborted) return 1; // the signal handler reports and exits
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
