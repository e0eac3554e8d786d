/**
 * What every mode of the bench shares: the run's context (placement, temp dir, the mock upstream), the bench's
 * account and key, starting the gateway and the floor proxy as the bench measures them, and their warm-up.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from './backends.js';
import type { Cleanup } from './cleanup.js';
import { runRound, TargetClient } from './load.js';
import type { BenchOptions } from './options.js';
import { startOtlpSink, type OtlpSink } from './otlp-sink.js';
import { pinBenchProcess, type Pinning } from './pinning.js';
import {
  childEnvironment,
  clockTicksPerSecond,
  FLOOR_PATH,
  freePort,
  listeningUrl,
  MOCK_PATH,
  runCliJson,
  startProcess,
  waitForHealthy,
  type ManagedProcess,
} from './processes.js';
import type { Target } from './scenarios.js';

export const EMAIL = 'bench@example.com';
export const PASSWORD = 'bench-password-123';
export const BENCH_TIER = 'bench';

/** Warm-up requests run this many at once, enough to get the hot paths compiled. */
const WARM_UP_CONCURRENCY = 16;

/** A gateway under --cpu-prof writes its profile on exit, which can take a while for a long run. */
export const PROFILE_STOP_GRACE_MS = 20_000;

/** Under callgrind node starts ~50x slower, slower still on a busy machine. */
export const CALLGRIND_START_TIMEOUT_MS = 600_000;

export function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

export interface Context {
  options: BenchOptions;
  pinning: Pinning;
  directory: string;
  cleanup: Cleanup;
  stop: AbortSignal;
  mock: ManagedProcess;
  mockOrigin: string;
  ticksPerSecond: number;
  /** `--otel`: where the gateways export their traces and metrics. */
  otlpSink: OtlpSink | undefined;
  /** Open files each child may hold (the c10k mode raises it); undefined: inherited. */
  fileLimit: number | undefined;
}

/** The launch settings every child of the run shares: its file limit when the mode raised it. */
function limits(context: Pick<Context, 'fileLimit'>): { fileLimit?: number } {
  return context.fileLimit === undefined ? {} : { fileLimit: context.fileLimit };
}

/** Account, tier, credit and key in the backend's database, through the built CLI as an operator would. */
export async function createAccountKey(context: Context, backend: Backend): Promise<string> {
  const env = childEnvironment({ ...backend.env, LOG_LEVEL: 'warn' });
  const cli = (args: string[]) => runCliJson(args, env, context.directory);
  await cli(['accounts', 'create', '--email', EMAIL, '--password', PASSWORD]);
  await cli(['accounts', 'tier', '--email', EMAIL, '--tier', BENCH_TIER]);
  // Billing stays on (admission and settlement are part of what is measured); the balance covers any run.
  await cli(['credit', '--email', EMAIL, '--usd', '1000000', '--note', 'bench']);
  const created = await cli(['keys', 'create', '--email', EMAIL, '--name', 'bench']);
  if (typeof created.key !== 'string') throw new Error(`keys create returned no key: ${JSON.stringify(created)}`);
  return created.key;
}

/** `node --cpu-prof` into a directory of the child's own, when the run asks for profiles. */
function profileFlags(context: Context, name: string, profile: boolean): string[] {
  return profile && context.options.cpuProfileDir !== undefined
    ? ['--cpu-prof', `--cpu-prof-dir=${join(context.options.cpuProfileDir, name)}`]
    : [];
}

export async function startGateway(
  context: Context,
  name: string,
  settings: Record<string, string>,
  profile: boolean,
  wrapper?: readonly string[],
): Promise<{ gateway: ManagedProcess; origin: string }> {
  const port = await freePort();
  // Every vendor family the routes use points at the mock; keys are required by the adapters, not checked by the mock.
  const env = childEnvironment({
    ...settings,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    OPENAI_BASE_URL: `${context.mockOrigin}/openai/v1`,
    OPENAI_API_KEY: 'sk-bench-openai',
    ANTHROPIC_BASE_URL: `${context.mockOrigin}/anthropic`,
    ANTHROPIC_API_KEY: 'sk-bench-anthropic',
    ...(context.otlpSink === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: context.otlpSink.origin }),
  });
  const flags = profileFlags(context, name, profile);
  const gateway = startProcess(name, ['serve'], env, context.directory, {
    core: context.pinning.gatewayCore,
    nodeFlags: flags,
    ...(wrapper === undefined ? {} : { wrapper }),
    ...limits(context),
  });
  context.cleanup.stopProcess(gateway);
  const origin = `http://127.0.0.1:${port}`;
  await waitForHealthy(`${origin}/healthz`, gateway, wrapper === undefined ? undefined : CALLGRIND_START_TIMEOUT_MS);
  return { gateway, origin };
}

/** The floor proxy in front of the mock, on the gateway's core with the gateway's node flags, as the gateway is started. */
export async function startFloor(context: Context, connections?: number): Promise<Floor> {
  const name = 'floor-proxy';
  const floor = startProcess(
    name,
    [
      '--upstream',
      context.mockOrigin,
      '--port',
      '0',
      ...(connections === undefined ? [] : ['--connections', String(connections)]),
    ],
    childEnvironment({}),
    context.directory,
    {
      core: context.pinning.gatewayCore,
      nodeFlags: profileFlags(context, name, true),
      script: FLOOR_PATH,
      ...limits(context),
    },
  );
  context.cleanup.stopProcess(floor);
  return { floor, origin: await listeningUrl(floor) };
}

export interface Floor {
  floor: ManagedProcess;
  origin: string;
}

/**
 * Every target (the gateway on every route; the floor proxy), JSON and stream, before anything is measured: the
 * first scenario must not pay for compiling code the later ones find ready (that once made the first scenario
 * look twice as expensive as the rest).
 */
export async function warmUp(context: Context, targets: readonly Target[], noncePrefix: string): Promise<void> {
  if (context.options.warmupMs === 0 && context.options.warmupRequests === 0) return;
  for (const [index, target] of targets.entries()) {
    for (const stream of [false, true])
      await warmTarget(context, target, stream, `${noncePrefix}${index}${stream ? 's' : 'j'}`);
  }
}

/** One target, JSON or stream replies: at least --warmup-requests requests and twice --warmup-ms, 16 at a time. */
export async function warmTarget(
  context: Context,
  target: Target,
  stream: boolean,
  noncePrefix: string,
): Promise<void> {
  const client = new TargetClient(target, WARM_UP_CONCURRENCY, { stream, paceMs: 0 }, noncePrefix);
  try {
    // A count as well as a time: on a busy machine a fixed time is too few requests for V8 to optimise the
    // hot path, and its compiler threads then bill the first scenarios for it.
    let requests = 0;
    const startedAt = performance.now();
    while (requests < context.options.warmupRequests || performance.now() - startedAt < context.options.warmupMs * 2) {
      const result = await runRound(
        client,
        { concurrency: WARM_UP_CONCURRENCY },
        context.options.warmupMs,
        context.stop,
      );
      // Interrupted: a round returns at once with nothing done, and looping on would starve the shutdown.
      context.stop.throwIfAborted();
      if (result.failures > 0)
        throw new Error(
          `warm-up ${target.name} ${target.path} ${stream ? 'stream' : 'JSON'}: ${result.failureMessages.join(' | ')}`,
        );
      requests += result.requests;
    }
  } finally {
    await client.destroy();
  }
}

/** What every mode shares: placement, the temp dir and its tollgate.yaml, and the mock upstream. */
/** The run's tollgate.yaml: the tiers (see prepare), then `extra` (the c10k mode's deployments). */
export function benchYaml(extra = ''): string {
  return `tiers:\n${[BENCH_TIER, 'standard', 'pro', 'enterprise'].map((tier) => `  ${tier}:\n    requestsPerMinute: 1000000000\n`).join('')}${extra}`;
}

export async function prepare(
  options: BenchOptions,
  cleanup: Cleanup,
  stop: AbortSignal,
  fileLimit?: number,
): Promise<Context> {
  const pinning = pinBenchProcess(options.pin);
  progress(`placement: ${pinning.description}`);
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  cleanup.removeDirectory(directory);
  if (options.cpuProfileDir !== undefined) mkdirSync(options.cpuProfileDir, { recursive: true });
  // Every process runs in the temp dir, so this tollgate.yaml configures them all: a tier far above what one
  // run sends, so the bench measures the limiter's cost without being refused by it; the built-in tiers too, for
  // the --accounts mode's 50 accounts, which keep the default tier.
  await writeFile(join(directory, 'tollgate.yaml'), benchYaml());

  const mock = startProcess('mock upstream', ['--port', '0'], childEnvironment({}), directory, {
    core: pinning.loadCore,
    script: MOCK_PATH,
    ...limits({ fileLimit }),
  });
  cleanup.stopProcess(mock);
  const mockOrigin = await listeningUrl(mock);
  const otlpSink = options.otel ? await startOtlpSink() : undefined;
  if (otlpSink !== undefined) {
    progress(`--otel: gateways export OpenTelemetry to ${otlpSink.origin}`);
    cleanup.closeLater(() => {
      progress(`--otel: the sink received ${JSON.stringify(otlpSink.received())}`);
      return otlpSink.close();
    });
  }
  return {
    options,
    pinning,
    directory,
    cleanup,
    stop,
    mock,
    mockOrigin,
    otlpSink,
    fileLimit,
    ticksPerSecond: clockTicksPerSecond(),
  };
}

/** A child that died mid-run is the news, not the /proc read or the failed requests that follow from it. */
export function assertAlive(children: readonly ManagedProcess[]): void {
  for (const child of children) {
    if (!child.running)
      throw new Error(
        `The ${child.name} ${child.exitDescription()} during the run. Its last output:\n${child.outputTail().join('\n')}`,
      );
  }
}
