/**
 * Folds the rounds of one scenario into per-target summaries and the gateway-vs-direct comparison (and the
 * floor-vs-direct one where the floor proxy was measured).
 * CPU times are summed over all rounds before dividing: /proc ticks are 10 ms at CLK_TCK 100, far coarser
 * than one request, so only a whole scenario's worth says anything.
 */
import type { RoundResult } from './load.js';
import type { Scenario, TargetName } from './scenarios.js';
import { distribution, SampleList, type Distribution } from './stats.js';

/** One target's turn in one round, with the CPU the processes spent during it. */
export interface RoundMeasurement {
  round: number;
  result: RoundResult;
  /**
   * Ticks of the process behind the target during the turn: the gateway, or the floor proxy in floor turns.
   * Direct turns read the gateway's, which idles through them, so those are ~0.
   */
  proxyCpuTicks: number;
  mockCpuTicks: number;
  /** CPU of the bench process itself, from process.cpuUsage(), in microseconds. */
  clientCpuMicros: number;
}

export interface TargetSummary {
  requests: number;
  failures: number;
  failuresByStatus: Record<string, number>;
  failureMessages: string[];
  elapsedMs: number;
  throughputRps: number;
  /** Throughput of each round, in order: the spread shows how noisy the machine was. */
  roundThroughputRps: number[];
  latencyMs: Distribution;
  /** Streams only. */
  ttftMs: Distribution | null;
  /** Paced streams: content deltas that arrived bunched with the one before (0 when chunks are forwarded as they come). */
  bunchedDeltas: number;
  /** Raw /proc tick totals behind the per-request CPU figures, to judge their resolution. */
  proxyCpuTicks: number;
  mockCpuTicks: number;
  /** CPU the gateway (gateway target) or the floor proxy (floor target) spent per request; null for direct. */
  proxyCpuMsPerRequest: number | null;
  mockCpuMsPerRequest: number;
  clientCpuMsPerRequest: number;
  /** Bench-process CPU time over wall time: near 1 means the load generator, not the target, was the limit. */
  clientCpuBusy: number;
}

export interface Comparison {
  addedLatencyP50Ms: number;
  addedLatencyP90Ms: number;
  addedLatencyP99Ms: number;
  /** proxied (gateway or floor) throughput / direct throughput. */
  throughputRatio: number;
  addedTtftP50Ms: number | null;
  addedTtftP99Ms: number | null;
}

export interface ScenarioSummary {
  id: string;
  title: string;
  route: string;
  paceMs: number;
  stream: boolean;
  concurrency: number;
  /** Content deltas per reply and prompt filler in KiB: the request shape (see SHAPE_SCENARIOS). */
  chunks: number;
  promptKiB: number;
  /** How the mock wrote the stream's events (see UpstreamWrites). */
  writes: Scenario['writes'];
  rounds: number;
  failed: boolean;
  direct: TargetSummary;
  gateway: TargetSummary;
  /** Gateway against direct. */
  comparison: Comparison;
  /** The floor proxy, in the scenarios and the backend run where it was measured; null elsewhere. */
  floor: TargetSummary | null;
  /** Floor against direct, the same way. */
  floorComparison: Comparison | null;
}

export class ScenarioMeasurements {
  private readonly turns: Record<TargetName, RoundMeasurement[]> = { direct: [], gateway: [], floor: [] };

  constructor(readonly scenario: Scenario) {}

  add(measurement: RoundMeasurement): void {
    this.turns[measurement.result.target].push(measurement);
  }

  summary(clockTicksPerSecond: number): ScenarioSummary {
    const direct = summarizeTarget(this.turns.direct, this.scenario.stream, clockTicksPerSecond, false);
    const gateway = summarizeTarget(this.turns.gateway, this.scenario.stream, clockTicksPerSecond, true);
    const floor =
      this.turns.floor.length === 0
        ? null
        : summarizeTarget(this.turns.floor, this.scenario.stream, clockTicksPerSecond, true);
    const floorFailed = floor !== null && (floor.failures > 0 || floor.requests === 0);
    return {
      id: this.scenario.id,
      title: this.scenario.title,
      route: this.scenario.route.id,
      paceMs: this.scenario.paceMs,
      stream: this.scenario.stream,
      concurrency: this.scenario.concurrency,
      chunks: this.scenario.chunks,
      promptKiB: this.scenario.promptKiB,
      writes: this.scenario.writes,
      rounds: Math.max(this.turns.direct.length, this.turns.gateway.length),
      failed:
        direct.failures > 0 || gateway.failures > 0 || direct.requests === 0 || gateway.requests === 0 || floorFailed,
      direct,
      gateway,
      comparison: compare(direct, gateway),
      floor,
      floorComparison: floor === null ? null : compare(direct, floor),
    };
  }
}

/** What `proxied` adds to `direct`. */
function compare(direct: TargetSummary, proxied: TargetSummary): Comparison {
  return {
    addedLatencyP50Ms: proxied.latencyMs.p50 - direct.latencyMs.p50,
    addedLatencyP90Ms: proxied.latencyMs.p90 - direct.latencyMs.p90,
    addedLatencyP99Ms: proxied.latencyMs.p99 - direct.latencyMs.p99,
    throughputRatio: proxied.throughputRps / direct.throughputRps,
    addedTtftP50Ms: proxied.ttftMs === null || direct.ttftMs === null ? null : proxied.ttftMs.p50 - direct.ttftMs.p50,
    addedTtftP99Ms: proxied.ttftMs === null || direct.ttftMs === null ? null : proxied.ttftMs.p99 - direct.ttftMs.p99,
  };
}

function summarizeTarget(
  turns: RoundMeasurement[],
  stream: boolean,
  clockTicksPerSecond: number,
  isProxy: boolean,
): TargetSummary {
  const latencies = new SampleList();
  const ttfts = new SampleList();
  const failuresByStatus: Record<string, number> = {};
  const failureMessages: string[] = [];
  let requests = 0;
  let failures = 0;
  let bunchedDeltas = 0;
  let elapsedMs = 0;
  let proxyTicks = 0;
  let mockTicks = 0;
  let clientMicros = 0;
  for (const { result, proxyCpuTicks, mockCpuTicks, clientCpuMicros } of turns) {
    latencies.append(result.latencies);
    ttfts.append(result.ttfts);
    requests += result.requests;
    bunchedDeltas += result.bunchedDeltas;
    failures += result.failures;
    elapsedMs += result.elapsedMs;
    proxyTicks += proxyCpuTicks;
    mockTicks += mockCpuTicks;
    clientMicros += clientCpuMicros;
    for (const [status, count] of Object.entries(result.failuresByStatus))
      failuresByStatus[status] = (failuresByStatus[status] ?? 0) + count;
    for (const message of result.failureMessages) if (failureMessages.length < 5) failureMessages.push(message);
  }
  const ticksToMs = 1000 / clockTicksPerSecond;
  const perRequest = (ms: number): number => (requests === 0 ? Number.NaN : ms / requests);
  return {
    requests,
    failures,
    failuresByStatus,
    failureMessages,
    elapsedMs,
    throughputRps: elapsedMs === 0 ? 0 : (requests * 1000) / elapsedMs,
    roundThroughputRps: turns.map(({ result }) =>
      result.elapsedMs === 0 ? 0 : (result.requests * 1000) / result.elapsedMs,
    ),
    latencyMs: distribution(latencies),
    ttftMs: stream ? distribution(ttfts) : null,
    bunchedDeltas,
    proxyCpuTicks: proxyTicks,
    mockCpuTicks: mockTicks,
    proxyCpuMsPerRequest: isProxy ? perRequest(proxyTicks * ticksToMs) : null,
    mockCpuMsPerRequest: perRequest(mockTicks * ticksToMs),
    clientCpuMsPerRequest: perRequest(clientMicros / 1000),
    clientCpuBusy: elapsedMs === 0 ? 0 : clientMicros / 1000 / elapsedMs,
  };
}
