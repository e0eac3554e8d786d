/** The bench's output: the JSON record written to bench/results/latest.json and the tables printed. */
import type { LimiterCost } from './limiter-cost.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ScenarioSummary, TargetSummary } from './measurements.js';
import type { BenchOptions } from './options.js';

export interface GatewayProcessReport {
  /** VmRSS right after /healthz first answered, before any load. */
  idleRssMiB: number;
  /** VmRSS at the end of the run. */
  endRssMiB: number;
  /** VmHWM at the end of the run: the peak over the whole run. */
  peakRssMiB: number;
  /** Lines the gateway wrote after start-up (LOG_LEVEL=warn: any line is a warning or an error). */
  outputLinesDuringRun: number;
  outputTail: string[];
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  passed: boolean;
  options: BenchOptions;
  environment: {
    node: string;
    platform: string;
    cpuModel: string;
    cpuCount: number;
    /** 1-minute load average when the bench started: other work on the machine skews everything. */
    loadAverageAtStart: number;
    clockTicksPerSecond: number;
  };
  scenarios: ScenarioSummary[];
  /** What one rate-limit check costs, in-process and with Redis. */
  limiterCost: LimiterCost;
  gatewayProcess: GatewayProcessReport;
  simulatorProcess: { outputLinesDuringRun: number; outputTail: string[] };
}

export function writeReport(path: string, report: BenchReport): void {
  mkdirSync(dirname(path), { recursive: true });
  // NaN (no samples) is not JSON: it becomes null rather than a crash or a silent 0.
  const json = JSON.stringify(report, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value), 2);
  writeFileSync(path, `${json}\n`);
}

const LABEL_WIDTH = 28;
const COLUMN_WIDTH = 14;

function row(label: string, direct: string, gateway: string, comparison = ''): string {
  return `${label.padEnd(LABEL_WIDTH)}${direct.padStart(COLUMN_WIDTH)}${gateway.padStart(COLUMN_WIDTH)}   ${comparison}`.trimEnd();
}

/** Milliseconds with about three significant digits: 0.213, 4.52, 37.1, 412. */
function ms(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-';
  const magnitude = Math.abs(value);
  return value.toFixed(magnitude < 10 ? 3 : magnitude < 100 ? 2 : magnitude < 1000 ? 1 : 0);
}

function signedMs(value: number | null | undefined): string {
  const text = ms(value);
  return value !== null && value !== undefined && value >= 0 ? `+${text}` : text;
}

function rate(value: number): string {
  return Number.isFinite(value) ? value.toFixed(value < 100 ? 1 : 0) : '-';
}

function range(values: number[]): string {
  if (values.length === 0) return '-';
  return `${rate(Math.min(...values))}-${rate(Math.max(...values))}`;
}

function counts(summary: TargetSummary): string {
  return `${summary.requests} (${summary.failures})`;
}

function scenarioTable(scenario: ScenarioSummary, options: BenchOptions): string {
  const { direct, gateway, comparison } = scenario;
  const lines = [
    `== ${scenario.title}: ${scenario.rounds} rounds x ${options.durationMs} ms per target  [${scenario.failed ? 'FAILED' : 'ok'}]`,
    row('', 'direct', 'gateway', 'gateway vs direct'),
    row('requests (failed)', counts(direct), counts(gateway)),
    row('throughput req/s', rate(direct.throughputRps), rate(gateway.throughputRps), `x${comparison.throughputRatio.toFixed(3)}`),
    row('  range over rounds', range(direct.roundThroughputRps), range(gateway.roundThroughputRps)),
    row('latency p50 ms', ms(direct.latencyMs.p50), ms(gateway.latencyMs.p50), signedMs(comparison.addedLatencyP50Ms)),
    row('latency p90 ms', ms(direct.latencyMs.p90), ms(gateway.latencyMs.p90), signedMs(comparison.addedLatencyP90Ms)),
    row('latency p99 ms', ms(direct.latencyMs.p99), ms(gateway.latencyMs.p99), signedMs(comparison.addedLatencyP99Ms)),
  ];
  if (scenario.stream) {
    lines.push(
      row('TTFT p50 ms', ms(direct.ttftMs?.p50), ms(gateway.ttftMs?.p50), signedMs(comparison.addedTtftP50Ms)),
      row('TTFT p99 ms', ms(direct.ttftMs?.p99), ms(gateway.ttftMs?.p99), signedMs(comparison.addedTtftP99Ms)),
    );
  }
  lines.push(
    row('gateway CPU ms/req', '-', ms(gateway.gatewayCpuMsPerRequest)),
    row('simulator CPU ms/req', ms(direct.simulatorCpuMsPerRequest), ms(gateway.simulatorCpuMsPerRequest)),
    row('bench client CPU ms/req', ms(direct.clientCpuMsPerRequest), ms(gateway.clientCpuMsPerRequest)),
    row('bench client CPU busy', percent(direct.clientCpuBusy), percent(gateway.clientCpuBusy), 'near 100% = client-bound'),
  );
  for (const [name, summary] of [['direct', direct], ['gateway', gateway]] as const) {
    if (summary.failures === 0) continue;
    lines.push(`  ${name} failures by status: ${JSON.stringify(summary.failuresByStatus)}`);
    for (const message of summary.failureMessages) lines.push(`    ${message}`);
  }
  return lines.join('\n');
}

function percent(fraction: number): string {
  return Number.isFinite(fraction) ? `${(fraction * 100).toFixed(0)}%` : '-';
}

export function formatReport(report: BenchReport): string {
  const { environment, gatewayProcess } = report;
  const sections = [
    `Tollgate bench: node ${environment.node}, ${environment.cpuCount} x ${environment.cpuModel}, load average ${environment.loadAverageAtStart.toFixed(2)} at start`,
    'Bench client, simulator and gateway share these CPUs: compare the two columns, not the absolute numbers.',
    ...report.scenarios.map((scenario) => scenarioTable(scenario, report.options)),
    [
      '== gateway process',
      `RSS idle ${gatewayProcess.idleRssMiB.toFixed(1)} MiB, end ${gatewayProcess.endRssMiB.toFixed(1)} MiB, peak (VmHWM) ${gatewayProcess.peakRssMiB.toFixed(1)} MiB`,
      gatewayProcess.outputLinesDuringRun === 0
        ? 'no log output during the run'
        : `${gatewayProcess.outputLinesDuringRun} log lines during the run; last ones:\n${gatewayProcess.outputTail.map((line) => `  ${line}`).join('\n')}`,
    ].join('\n'),
  ];
  const { limiterCost } = report;
  sections.push(
    [
      '== rate-limit check',
      `in-process: ${limiterCost.memoryMicrosPerCheck.toFixed(2)} µs per check (target < 50 µs)`,
      limiterCost.redis === null
        ? 'Redis: not reachable (set REDIS_URL), not measured'
        : `Redis (${limiterCost.redis.url}): ${limiterCost.redis.microsPerCheck.toFixed(0)} µs per sequential check, ${limiterCost.redis.roundTripsPerCheck.toFixed(2)} round trips per check (target: 1)`,
    ].join('\n'),
  );
  if (report.simulatorProcess.outputLinesDuringRun > 0) {
    sections.push(
      `== simulator wrote ${report.simulatorProcess.outputLinesDuringRun} lines during the run; last ones:\n${report.simulatorProcess.outputTail.map((line) => `  ${line}`).join('\n')}`,
    );
  }
  const failed = report.scenarios.filter((scenario) => scenario.failed).map((scenario) => scenario.title);
  sections.push(failed.length === 0 ? 'All scenarios passed their response checks.' : `FAILED: ${failed.join('; ')}`);
  return `${sections.join('\n\n')}\n`;
}
