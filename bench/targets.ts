/**
 * The issue's targets, each judged from the measured figures of one backend run. A target whose scenario
 * was not run (filtered out, or the backend was unavailable) is "not measured", never a pass. Beside the
 * CPU and added-latency figures stands the floor's (a bare Node pass-through proxy, measured once per bench
 * run) and the gateway's figure as a multiple of it; the verdict stays on the gateway's own figure.
 */
import type { AccountsReport } from './accounts.js';
import type { BackendName } from './backends.js';
import type { MachineNoise } from './machine-noise.js';
import type { Comparison, ScenarioSummary } from './measurements.js';

const BYTES_PER_KIB = 1024;
const BYTES_PER_MB = 1_000_000;
/** Peak RSS at concurrency 128 may be this multiple of the floor proxy's over the same scenario. */
const PEAK_RSS_FLOOR_MULTIPLE = 1.3;

export interface RoundTripKind {
  kind: string;
  requests: number;
  /** What the requests' round trips were, less the gateway's background round trips over the same time. */
  postgresPerRequest: number;
  /** All round trips over the requests' time, per request, background included. */
  postgresCountedPerRequest: number;
  redisPerRequest: number;
  /** The statement each PostgreSQL round trip of one request started with, in order. */
  postgresStatements: string[];
}

export interface RoundTripReport {
  kinds: RoundTripKind[];
  /** Round trips while no request ran (background work: polls, sweeper), per second. */
  idlePostgresPerSecond: number;
  idleRedisPerSecond: number;
}

export interface BackendRun {
  backend: BackendName;
  label: string;
  /** Why the backend was not measured; undefined when it was. */
  skipped?: string;
  scenarios: ScenarioSummary[];
  gatewayCpusAllowed: string;
  /** RSS 1 s after the gateway first answered its health check. */
  startRssKiB: number;
  /** RSS after 12 s at rest, before any load (V8's memory reducer has run). */
  idleRssKiB: number;
  /** RSS after ~30 s at rest after the load (null with --quick): what a gateway keeps once traffic stops. */
  idleAfterLoadRssKiB: number | null;
  /** VmHWM over the concurrency-128 scenario alone (reset before it), or over the whole run when reset failed. */
  peakRssKiB: number | null;
  peakRssScope: 'concurrency-128 scenario' | 'whole run';
  /** The floor proxy's VmHWM over the same concurrency-128 scenario (null: no floor in it, or no reset). */
  floorPeakRssKiB: number | null;
  endRssKiB: number;
  roundTrips: RoundTripReport | null;
  /** `--accounts` on PostgreSQL: one hot account vs 50 accounts at concurrency 64 (accounts.ts). */
  accounts?: AccountsReport;
  /**
   * Output slices the gateway granted or refused over the whole run, per API request (its own /metrics): the
   * storage calls a reply costs beyond admission and settlement (none for a typical reply:
   * docs/architecture.md#holds-that-grow).
   */
  slices?: { requests: number; slices: number };
  /** Other work on the machine during the measured rounds (null when nothing was measured). */
  noise: MachineNoise | null;
  gatewayOutputLines: number;
  gatewayOutputTail: string[];
}

export interface Measured {
  text: string;
  /** null: not measured or not judged for this backend. */
  pass: boolean | null;
}

export interface TargetRow {
  target: string;
  limit: string;
  values: Partial<Record<BackendName, Measured>>;
}

const NOT_MEASURED: Measured = { text: 'not measured', pass: null };
/**
 * `--shapes`: 64 paced streams in flight, arriving evenly (added TTFT <= 1 ms under that load), and the
 * same 64 starting together in step, shown beside it and not judged: a burst's TTFT is mostly the wait behind
 * the other starts, queued one after another on the gateway's one core, not the cost of a load of 64 streams.
 */
const PACED_C64 = 'same-format-paced-c64';
const PACED_C64_BURST = 'same-format-paced-c64-burst';

function find(run: BackendRun, id: string): ScenarioSummary | undefined {
  return run.scenarios.find((scenario) => scenario.id === id && scenario.gateway.requests > 0);
}

function ms(value: number): string {
  return `${value.toFixed(3)} ms`;
}

function finite(value: number | null | undefined): number | undefined {
  return value === null || value === undefined || !Number.isFinite(value) ? undefined : value;
}

function cpu(run: BackendRun, id: string): number | undefined {
  return finite(find(run, id)?.gateway.proxyCpuMsPerRequest);
}

/** The scenario `id` where the floor was measured, whichever backend run that was (it does not depend on the backend). */
type FloorLookup = (id: string) => ScenarioSummary | undefined;

/**
 * How many times the floor's figure the gateway's is, e.g. "6.5x"; undefined when either is not above zero
 * (a floor of 0 ticks, or an added latency within noise of nothing, has no meaningful multiple).
 */
export function floorRatio(gateway: number | undefined, floor: number | undefined): string | undefined {
  if (
    gateway === undefined ||
    floor === undefined ||
    !Number.isFinite(gateway) ||
    !Number.isFinite(floor) ||
    gateway <= 0 ||
    floor <= 0
  )
    return undefined;
  return `${(gateway / floor).toFixed(1)}x`;
}

/** "floor 0.060 ms, 6.5x", "floor -0.010 ms" when there is no multiple, undefined when the floor was not measured. */
export function floorNote(
  gateway: number | undefined,
  floor: number | undefined,
  format: (value: number) => string,
): string | undefined {
  if (floor === undefined || !Number.isFinite(floor)) return undefined;
  const ratio = floorRatio(gateway, floor);
  return `floor ${format(floor)}${ratio === undefined ? '' : `, ${ratio}`}`;
}

function atMost(value: number | undefined, limit: number, format: (value: number) => string = ms): Measured {
  if (value === undefined || !Number.isFinite(value)) return NOT_MEASURED;
  return { text: format(value), pass: value <= limit };
}

/**
 * Judged at concurrency 16, the load the translated routes are compared at; c1 and c128 are shown beside it.
 * At c1 every request pays for its own wake-ups (a bare fastify + undici relay spent about four times the CPU
 * per request at c1 that it spent at c16 on the 2-core development machine), so c1 says more about the kernel.
 */
function sameFormatCpu(run: BackendRun, floorOf: FloorLookup): Measured {
  const id = 'same-format-json-c16';
  const judged = cpu(run, id);
  const others = [1, 128]
    .map((concurrency) => [concurrency, cpu(run, `same-format-json-c${concurrency}`)] as const)
    .filter((figure): figure is readonly [number, number] => figure[1] !== undefined)
    .map(([concurrency, value]) => `c${concurrency} ${value.toFixed(3)}`);
  if (judged === undefined) return NOT_MEASURED;
  const notes = [
    floorNote(judged, finite(floorOf(id)?.floor?.proxyCpuMsPerRequest), ms),
    others.length > 0 ? others.join(', ') : undefined,
  ].filter((note) => note !== undefined);
  return { text: `${ms(judged)}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`, pass: judged <= 0.15 };
}

function ratio(run: BackendRun, translated: string, sameFormat: string): Measured {
  const translatedCpu = cpu(run, translated);
  const baseCpu = cpu(run, sameFormat);
  if (translatedCpu === undefined || baseCpu === undefined || baseCpu === 0) return NOT_MEASURED;
  const factor = translatedCpu / baseCpu;
  return { text: `${ms(translatedCpu)} = ${factor.toFixed(2)}x`, pass: factor <= 2 };
}

function signedMs(value: number): string {
  return `${value >= 0 ? '+' : ''}${ms(value)}`;
}

/** The gateway's added figure against its limit, with the floor's added figure beside it when it was measured. */
function added(
  run: BackendRun,
  id: string,
  pick: (comparison: Comparison) => number | null,
  limit: number,
  floorOf: FloorLookup,
): Measured {
  const scenario = find(run, id);
  if (scenario === undefined) return NOT_MEASURED;
  const gateway = finite(pick(scenario.comparison));
  const measured = atMost(gateway, limit, signedMs);
  const floorComparison = floorOf(id)?.floorComparison;
  const note = floorNote(
    gateway,
    floorComparison === null || floorComparison === undefined ? undefined : finite(pick(floorComparison)),
    signedMs,
  );
  return measured === NOT_MEASURED || note === undefined
    ? measured
    : { ...measured, text: `${measured.text} (${note})` };
}

/** A figure reported beside a target without being judged. */
function shown(measured: Measured): Measured {
  return { ...measured, pass: null };
}

function megabytes(kib: number): string {
  return `${((kib * BYTES_PER_KIB) / BYTES_PER_MB).toFixed(1)} MB`;
}

/** Every target row, with one value per backend run. */
export function judgeTargets(runs: readonly BackendRun[]): TargetRow[] {
  const floorOf: FloorLookup = (id) => {
    for (const run of runs) {
      const scenario = run.scenarios.find((each) => each.id === id && each.floor !== null && each.floor.requests > 0);
      if (scenario !== undefined) return scenario;
    }
    return undefined;
  };
  const rows: { target: string; limit: string; judge: (run: BackendRun) => Measured }[] = [
    {
      target: 'CPU/request, same-format non-stream c16',
      limit: '<= 0.150 ms',
      judge: (run) => sameFormatCpu(run, floorOf),
    },
    {
      target: 'CPU/request, openai -> anthropic non-stream c16, vs same-format',
      limit: '<= 2x',
      judge: (run) => ratio(run, 'openai-to-anthropic-json-c16', 'same-format-json-c16'),
    },
    {
      target: 'CPU/request, openai -> anthropic stream c64, vs same-format',
      limit: '<= 2x',
      judge: (run) => ratio(run, 'openai-to-anthropic-stream-c64', 'same-format-stream-c64'),
    },
    {
      target: 'CPU/request, anthropic -> openai non-stream c16, vs same-format',
      limit: '<= 2x',
      judge: (run) => ratio(run, 'anthropic-to-openai-json-c16', 'same-format-json-c16'),
    },
    {
      target: 'CPU/request, anthropic -> openai stream c64, vs same-format',
      limit: '<= 2x',
      judge: (run) => ratio(run, 'anthropic-to-openai-stream-c64', 'same-format-stream-c64'),
    },
    {
      target: 'added latency p50, non-stream c1',
      limit: '<= 0.400 ms',
      judge: (run) => added(run, 'same-format-json-c1', (c) => c.addedLatencyP50Ms, 0.4, floorOf),
    },
    {
      target: 'added latency p99, non-stream c1',
      limit: '<= 1.000 ms',
      judge: (run) => added(run, 'same-format-json-c1', (c) => c.addedLatencyP99Ms, 1, floorOf),
    },
    {
      target: 'added time to first token p50, stream c1',
      limit: '<= 0.500 ms',
      judge: (run) => added(run, 'same-format-stream-c1', (c) => c.addedTtftP50Ms, 0.5, floorOf),
    },
    {
      target: 'chunks forwarded as they arrive (paced streams: bunched deltas)',
      limit: '0',
      judge: (run) => {
        const paced = run.scenarios.filter((each) => each.paceMs > 0 && each.gateway.requests > 0);
        if (paced.length === 0) return NOT_MEASURED;
        const text = paced
          .map(
            ({ id, concurrency, chunks, gateway, direct }) =>
              `c${concurrency}${id === PACED_C64_BURST ? ' together' : ''}: ${gateway.bunchedDeltas} of ${gateway.latencyMs.count * chunks} (direct ${direct.bunchedDeltas})`,
          )
          .join('; ');
        // Judged on one paced stream at a time: with 64 at once the load client itself falls behind and reads
        // deltas together (the direct turns count some too); those are shown, not judged.
        const single = paced.find((each) => each.concurrency === 1);
        return { text, pass: single === undefined ? null : single.gateway.bunchedDeltas === 0 };
      },
    },
    {
      target: 'added time to first token p50, 64 paced streams',
      limit: '<= 1.000 ms',
      judge: (run) => added(run, PACED_C64, (c) => c.addedTtftP50Ms, 1, floorOf),
    },
    {
      target: 'added time to first token p99, 64 paced streams',
      limit: '<= 1.000 ms',
      judge: (run) => added(run, PACED_C64, (c) => c.addedTtftP99Ms, 1, floorOf),
    },
    {
      target: 'added time to first token p50, 64 paced streams starting together',
      limit: 'shown',
      judge: (run) => shown(added(run, PACED_C64_BURST, (c) => c.addedTtftP50Ms, 1, floorOf)),
    },
    {
      target: 'added time to first token p99, 64 paced streams starting together',
      limit: 'shown',
      judge: (run) => shown(added(run, PACED_C64_BURST, (c) => c.addedTtftP99Ms, 1, floorOf)),
    },
    {
      target: 'idle RSS (12 s at rest, before the load)',
      limit: '<= 80 MB',
      judge: (run) => {
        const afterLoad =
          run.idleAfterLoadRssKiB === null ? '' : `, idle after the load ${megabytes(run.idleAfterLoadRssKiB)}`;
        return {
          text: `${megabytes(run.idleRssKiB)} (1 s after start ${megabytes(run.startRssKiB)}${afterLoad})`,
          pass: (run.idleRssKiB * BYTES_PER_KIB) / BYTES_PER_MB <= 80,
        };
      },
    },
    {
      target: 'peak RSS (VmHWM) at concurrency 128',
      limit: `<= ${PEAK_RSS_FLOOR_MULTIPLE}x`,
      judge: (run) => {
        if (run.peakRssKiB === null) return NOT_MEASURED;
        const text = `${megabytes(run.peakRssKiB)}${run.peakRssScope === 'whole run' ? ' (whole run)' : ''}`;
        // The floor runs once, beside the first backend: the others are judged against its peak.
        const floorPeak = run.floorPeakRssKiB ?? runs.find((each) => each.floorPeakRssKiB !== null)?.floorPeakRssKiB;
        if (floorPeak === undefined || floorPeak === null) return { text, pass: null };
        const multiple = run.peakRssKiB / floorPeak;
        return {
          text: `${text} (floor ${megabytes(floorPeak)}, ${multiple.toFixed(2)}x)`,
          pass: multiple <= PEAK_RSS_FLOOR_MULTIPLE,
        };
      },
    },
    {
      target: 'PostgreSQL round trips per request, same-format non-stream',
      limit: '<= 3',
      judge: (run) => {
        if (run.backend !== 'postgres') return { text: '-', pass: null };
        const kind = run.roundTrips?.kinds.find((each) => each.kind === 'same-format-json');
        return kind === undefined
          ? NOT_MEASURED
          : {
              // Read to the hundredth: the background subtracted is a rate, so the figure wanders by ~0.002.
              text: `${kind.postgresPerRequest.toFixed(2)} (${kind.postgresCountedPerRequest.toFixed(3)} with the background)`,
              pass: Math.round(kind.postgresPerRequest * 100) <= 300,
            };
      },
    },
    {
      target: 'every response complete and exact (content, chunks, usage)',
      limit: '0 wrong',
      judge: (run) => {
        if (run.scenarios.length === 0) return NOT_MEASURED;
        const wrong = run.scenarios.reduce(
          (sum, scenario) =>
            sum + scenario.direct.failures + scenario.gateway.failures + (scenario.floor?.failures ?? 0),
          0,
        );
        const total = run.scenarios.reduce(
          (sum, scenario) =>
            sum + scenario.direct.requests + scenario.gateway.requests + (scenario.floor?.requests ?? 0),
          0,
        );
        return { text: `${wrong} of ${total}`, pass: wrong === 0 };
      },
    },
  ];
  return rows.map(({ target, limit, judge }) => {
    const values: Partial<Record<BackendName, Measured>> = {};
    for (const run of runs)
      values[run.backend] = run.skipped === undefined ? judge(run) : { text: 'skipped', pass: null };
    return { target, limit, values };
  });
}
