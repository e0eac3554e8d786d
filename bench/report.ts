/**
 * The bench's output: a compact line per scenario (what was measured), the same for the floor proxy where it
 * was measured, then the one table the issue asks for (each target, its limit, and the measured value with
 * pass/fail per backend), and the JSON record.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { TelemetryCost } from './telemetry-cost.js';
import { formatHeapSizingSaving, type HeapSizingSaving } from './heap-probe.js';
import type { LimiterCost } from './limiter-cost.js';
import { formatAccounts } from './accounts.js';
import { describeNoise } from './machine-noise.js';
import type { Comparison, ScenarioSummary, TargetSummary } from './measurements.js';
import type { BenchOptions } from './options.js';
import { perChunkCosts } from './per-chunk.js';
import { floorRatio, type BackendRun, type TargetRow } from './targets.js';

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  /** Every response of every scenario was exactly what the mock sent. */
  responsesCorrect: boolean;
  /** Every measured target passed (targets not measured do not count either way). */
  targetsMet: boolean;
  options: BenchOptions;
  environment: {
    node: string;
    platform: string;
    cpuModel: string;
    cpuCount: number;
    /** 1-minute load average when the bench started: other work on the machine skews everything. */
    loadAverageAtStart: number;
    clockTicksPerSecond: number;
    pinning: string;
    benchCpusAllowed: string;
    mockCpusAllowed: string;
  };
  targets: TargetRow[];
  backends: BackendRun[];
  /** What one rate-limit check costs, in-process and with Redis. */
  limiterCost: LimiterCost;
  /** `--otel`: what one request's spans and metric records cost, apart from the HTTP path. */
  telemetryCost?: TelemetryCost;
  /** What the gateway's old-space sizing saves in RSS against V8's own growth, as a ratio (heap-probe.ts). */
  heapSizing?: HeapSizingSaving;
  mockOutputTail: string[];
}

export function writeReport(path: string, report: object): void {
  mkdirSync(dirname(path), { recursive: true });
  // NaN (no samples) is not JSON: it becomes null rather than a crash or a silent 0.
  const json = JSON.stringify(
    report,
    (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value),
    2,
  );
  writeFileSync(path, `${json}\n`);
}

/** How the mock wrote the run's streams. */
export function describeUpstream(options: Pick<BenchOptions, 'upstream' | 'upstreamPaceMs'>): string {
  switch (options.upstream) {
    case 'per-event':
      return 'each SSE event in its own socket write (the -coalesced scenario: one write per tick, as a second figure)';
    case 'paced':
      return `each SSE event in its own socket write, ${options.upstreamPaceMs} ms between content events (a vendor's pace)`;
    case 'coalesced':
      return "every stream's events coalesced into one socket write per tick (the older bench's shape)";
  }
}

/** Milliseconds with about three significant digits: 0.213, 4.52, 37.1, 412. */
function ms(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-';
  const magnitude = Math.abs(value);
  return value.toFixed(magnitude < 10 ? 3 : magnitude < 100 ? 2 : magnitude < 1000 ? 1 : 0);
}

function signed(value: number | null | undefined): string {
  const text = ms(value);
  return value !== null && value !== undefined && value >= 0 ? `+${text}` : text;
}

function rate(value: number): string {
  return Number.isFinite(value) ? value.toFixed(0) : '-';
}

/** The columns of a scenario line for one proxied target: "gw" for the gateway, "floor" for the floor proxy. */
function scenarioHeader(label: string): string {
  return [
    'scenario'.padEnd(38),
    `req/s dir/${label}`.padStart(17),
    `p50 ${label} (added)`.padStart(20),
    `p99 ${label} (added)`.padStart(20),
    'TTFT p50 (added)'.padStart(20),
    `${label} CPU/req`.padStart(14),
    'mock CPU/req'.padStart(13),
    'wrong'.padStart(7),
  ].join('');
}

function scenarioLine(scenario: ScenarioSummary, proxied: TargetSummary, comparison: Comparison): string {
  const { direct } = scenario;
  return [
    scenario.id.padEnd(38),
    `${rate(direct.throughputRps)}/${rate(proxied.throughputRps)}`.padStart(17),
    `${ms(proxied.latencyMs.p50)} (${signed(comparison.addedLatencyP50Ms)})`.padStart(20),
    `${ms(proxied.latencyMs.p99)} (${signed(comparison.addedLatencyP99Ms)})`.padStart(20),
    (scenario.stream ? `${ms(proxied.ttftMs?.p50)} (${signed(comparison.addedTtftP50Ms)})` : '-').padStart(20),
    ms(proxied.proxyCpuMsPerRequest).padStart(14),
    ms(proxied.mockCpuMsPerRequest).padStart(13),
    String(direct.failures + proxied.failures).padStart(7),
  ].join('');
}

/** The floor's lines, with the gateway's CPU and added p50 (TTFT p50 for streams) as multiples of the floor's. */
function floorLines(scenarios: readonly ScenarioSummary[]): string[] {
  const measured = scenarios.filter((scenario) => scenario.floor !== null && scenario.floorComparison !== null);
  if (measured.length === 0) return [];
  const lines = [
    "floor: a bare Node pass-through proxy (node:http in, undici out, bytes unchanged) on the gateway's core, same rounds;\n" +
      "gw/floor: the gateway's CPU/req and added p50 (TTFT p50 for streams) over the floor's",
    `${scenarioHeader('floor')}${'gw/floor CPU'.padStart(14)}${'gw/floor added'.padStart(16)}`,
  ];
  for (const scenario of measured) {
    if (scenario.floor === null || scenario.floorComparison === null) continue;
    const { gateway, comparison, floor, floorComparison } = scenario;
    const cpuRatio =
      floorRatio(gateway.proxyCpuMsPerRequest ?? undefined, floor.proxyCpuMsPerRequest ?? undefined) ?? '-';
    const addedRatio = scenario.stream
      ? floorRatio(comparison.addedTtftP50Ms ?? undefined, floorComparison.addedTtftP50Ms ?? undefined)
      : floorRatio(comparison.addedLatencyP50Ms, floorComparison.addedLatencyP50Ms);
    lines.push(
      `${scenarioLine(scenario, floor, floorComparison)}${cpuRatio.padStart(14)}${(addedRatio ?? '-').padStart(16)}`,
    );
  }
  return lines;
}

/** `--shapes`: what one more chunk of a long stream costs, gateway and floor, and the whole stream's CPU ratio. */
function perChunkLines(scenarios: readonly ScenarioSummary[]): string[] {
  const rows = perChunkCosts(scenarios);
  if (rows.length === 0) return [];
  const micros = (value: number | null): string =>
    value === null || !Number.isFinite(value) ? '-' : `${value.toFixed(2)} µs`;
  const lines = [
    'per-chunk CPU (long stream minus the 20-chunk stream of its route, c1, over the extra chunks); gw/floor: the multiple',
    `${'long stream'.padEnd(38)}${'gw/chunk'.padStart(12)}${'floor/chunk'.padStart(13)}${'gw/floor'.padStart(10)}${'gw CPU/stream'.padStart(15)}${'floor CPU/stream'.padStart(18)}${'gw/floor'.padStart(10)}`,
  ];
  for (const row of rows) {
    lines.push(
      `${row.id.padEnd(38)}${micros(row.gatewayMicrosPerChunk).padStart(12)}${micros(row.floorMicrosPerChunk).padStart(13)}` +
        `${(floorRatio(row.gatewayMicrosPerChunk, row.floorMicrosPerChunk ?? undefined) ?? '-').padStart(10)}` +
        `${`${ms(row.gatewayStreamMs)} ms`.padStart(15)}${(row.floorStreamMs === null ? '-' : `${ms(row.floorStreamMs)} ms`).padStart(18)}` +
        `${(floorRatio(row.gatewayStreamMs, row.floorStreamMs ?? undefined) ?? '-').padStart(10)}`,
    );
  }
  return lines;
}

function backendSection(run: BackendRun, options: BenchOptions): string {
  if (run.skipped !== undefined) return `== ${run.label}: skipped (${run.skipped})`;
  const withFloor = run.scenarios.some((scenario) => scenario.floor !== null);
  const lines = [
    `== ${run.label}: ${options.rounds} rounds x ${options.durationMs} ms per target, direct and gateway${withFloor ? ' (and floor)' : ''} alternating; gateway CPUs ${run.gatewayCpusAllowed}`,
    scenarioHeader('gw'),
    ...run.scenarios.map((scenario) => scenarioLine(scenario, scenario.gateway, scenario.comparison)),
    ...floorLines(run.scenarios),
    ...perChunkLines(run.scenarios),
  ];
  if (run.noise !== null) lines.push(describeNoise(run.noise));
  for (const scenario of run.scenarios) {
    for (const [name, summary] of [
      ['direct', scenario.direct],
      ['gateway', scenario.gateway],
      ['floor', scenario.floor],
    ] as const) {
      if (summary === null || summary.failures === 0) continue;
      lines.push(`  ${scenario.id} ${name} failures by status: ${JSON.stringify(summary.failuresByStatus)}`);
      for (const message of summary.failureMessages) lines.push(`    ${message}`);
    }
  }
  if (run.slices !== undefined && run.slices.requests > 0) {
    lines.push(
      `output slices (storage calls beyond admission and settlement): ${run.slices.slices} over ${run.slices.requests} requests, ` +
        `${(run.slices.slices / run.slices.requests).toFixed(3)} per request`,
    );
  }
  if (run.roundTrips !== null) {
    lines.push(
      `round trips per request (sequential, ${run.roundTrips.kinds[0]?.requests ?? 0} requests each, through a counting relay, ` +
        'less the background rate read at rest): ' +
        run.roundTrips.kinds
          .map(
            (kind) =>
              `${kind.kind} PG ${kind.postgresPerRequest.toFixed(2)} (${kind.postgresCountedPerRequest.toFixed(3)} counted) / ` +
              `Redis ${kind.redisPerRequest.toFixed(2)}`,
          )
          .join('; ') +
        `; at rest PG ${run.roundTrips.idlePostgresPerSecond.toFixed(2)}/s, Redis ${run.roundTrips.idleRedisPerSecond.toFixed(2)}/s`,
    );
    const traced = run.roundTrips.kinds[0];
    if (traced !== undefined && traced.postgresStatements.length > 0) {
      lines.push(`PostgreSQL round trips of one ${traced.kind} request, by the statement each starts with:`);
      traced.postgresStatements.forEach((statement, index) => {
        lines.push(`  ${String(index + 1).padStart(2)}. ${statement}`);
      });
    }
  }
  if (run.accounts !== undefined) lines.push(...formatAccounts(run.accounts));
  if (run.gatewayOutputLines > 0) {
    lines.push(
      `gateway wrote ${run.gatewayOutputLines} log lines during the run; last ones:`,
      ...run.gatewayOutputTail.map((line) => `  ${line}`),
    );
  }
  return lines.join('\n');
}

function verdict(pass: boolean | null): string {
  return pass === null ? '' : pass ? 'pass' : 'FAIL';
}

function targetTable(rows: readonly TargetRow[], runs: readonly BackendRun[]): string {
  const targetWidth = Math.max(...rows.map((row) => row.target.length)) + 2;
  // Wide enough for the longest value (the CPU row with the floor and the c1/c128 figures beside it).
  const valueWidth = Math.max(
    34,
    ...rows.flatMap((row) => Object.values(row.values).map((value) => value.text.length + 2)),
  );
  const header = [
    'target'.padEnd(targetWidth),
    'limit'.padEnd(13),
    ...runs.map((run) => run.label.padEnd(valueWidth + 6)),
  ]
    .join('')
    .trimEnd();
  const lines = [header, '-'.repeat(header.length)];
  for (const row of rows) {
    const cells = runs.map((run) => {
      const value = row.values[run.backend];
      return `${(value?.text ?? '-').padEnd(valueWidth)}${verdict(value?.pass ?? null).padEnd(6)}`;
    });
    lines.push([row.target.padEnd(targetWidth), row.limit.padEnd(13), ...cells].join('').trimEnd());
  }
  return lines.join('\n');
}

export function formatReport(report: BenchReport): string {
  const { environment } = report;
  const sections = [
    `Tollgate bench: node ${environment.node}, ${environment.cpuCount} x ${environment.cpuModel}, load average ${environment.loadAverageAtStart.toFixed(2)} at start\n` +
      `placement: ${environment.pinning} (bench CPUs ${environment.benchCpusAllowed}, mock CPUs ${environment.mockCpusAllowed})\n` +
      'Added = gateway minus direct (the mock called in the vendor protocol). CPU/req = gateway utime+stime from /proc over its requests.\n' +
      'Floor = a bare Node pass-through proxy (bench/floor-proxy.ts) measured the same way in the same rounds, once per run; Nx = gateway figure / floor figure.\n' +
      `Upstream: ${describeUpstream(report.options)}.`,
    ...report.backends.map((run) => backendSection(run, report.options)),
  ];
  const { limiterCost } = report;
  sections.push(
    `rate-limit check: in-process ${limiterCost.memoryMicrosPerCheck.toFixed(2)} µs; ` +
      (limiterCost.redis === null
        ? 'Redis not reachable'
        : `Redis ${limiterCost.redis.microsPerCheck.toFixed(0)} µs per sequential check, ${limiterCost.redis.roundTripsPerCheck.toFixed(2)} round trips`),
  );
  if (report.telemetryCost !== undefined)
    sections.push(
      `OpenTelemetry (--otel): ${report.telemetryCost.microsPerRequest.toFixed(1)} µs of CPU per request for its spans, ` +
        `their OTLP export and its metric records (${report.telemetryCost.requests} requests, in the bench process)`,
    );
  if (report.heapSizing !== undefined) sections.push(formatHeapSizingSaving(report.heapSizing));
  sections.push(`== targets\n${targetTable(report.targets, report.backends)}`);
  sections.push(
    report.responsesCorrect
      ? 'All responses were complete and exact.'
      : 'FAILED: some responses were wrong or missing (see above); figures are not comparable.',
  );
  return `${sections.join('\n\n')}\n`;
}
