/**
 * `--soak SECONDS`: does the gateway's memory grow under steady load? Mixed traffic (every route,
 * mostly streams) from SOAK_CONCURRENCY closed-loop clients for the whole time, the gateway's RSS (/proc) and
 * V8 heap (its own /metrics, prom-client's default gauges) sampled at a fixed interval, and a least-squares slope
 * of each over the run after its first quarter (V8 is still compiling and sizing its heap before that). A leak is
 * a slope that stays positive however long the run; a heap that plateaus has a slope that shrinks with the
 * length of the run. Every reply is checked as in the timed scenarios.
 */
import { readFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { TargetClient } from './load.js';
import { ROUTES, type RequestShape, type RouteId } from './scenarios.js';

/** Clients at once, as the issue's soak: 64 streams. */
export const SOAK_CONCURRENCY = 64;

/**
 * The mix, one entry per client slot in turn: the three routes, three streams for every JSON request, so 64
 * clients are 48 streams and 16 JSON requests in flight at any time.
 */
export const SOAK_MIX: readonly { route: RouteId; shape: RequestShape }[] = [
  { route: 'same-format', shape: { stream: true, paceMs: 0 } },
  { route: 'openai-to-anthropic', shape: { stream: true, paceMs: 0 } },
  { route: 'anthropic-to-openai', shape: { stream: true, paceMs: 0 } },
  { route: 'same-format', shape: { stream: false, paceMs: 0 } },
];

/** Clients per mix entry: SOAK_CONCURRENCY split as evenly as the mix allows. */
export function soakClients(
  concurrency = SOAK_CONCURRENCY,
): { route: RouteId; shape: RequestShape; clients: number }[] {
  return SOAK_MIX.map((entry, index) => ({
    ...entry,
    clients: Math.floor(concurrency / SOAK_MIX.length) + (index < concurrency % SOAK_MIX.length ? 1 : 0),
  })).filter((entry) => entry.clients > 0);
}

/** A sample every this many seconds: 120 samples over the issue's 10 minutes, at least one a second. */
export function sampleIntervalMs(seconds: number): number {
  return Math.max(1_000, Math.round((seconds * 1000) / 120));
}

export interface SoakSample {
  /** Seconds since the load started. */
  atS: number;
  rssKiB: number;
  /** V8 heap in use and committed, and memory held outside it (Buffers, native), from the gateway's /metrics. */
  heapUsedBytes: number | null;
  heapTotalBytes: number | null;
  externalBytes: number | null;
  /** Requests answered (all clients) since the previous sample. */
  requests: number;
}

export interface Slope {
  /** Least-squares slope, MB per minute. */
  mbPerMinute: number;
  /** Mean of the samples fitted, MB. */
  meanMb: number;
  samples: number;
}

export interface SoakReport {
  seconds: number;
  concurrency: number;
  mix: string;
  requests: number;
  failures: number;
  failureMessages: string[];
  samples: SoakSample[];
  /** Fitted over the samples after the first quarter of the run. */
  rssSlope: Slope | null;
  heapUsedSlope: Slope | null;
  peakRssKiB: number;
}

/** Least-squares slope of `values` over `atS` (seconds), in MB per minute; values are in bytes. Null under 3 points. */
export function slope(points: readonly { atS: number; bytes: number }[]): Slope | null {
  if (points.length < 3) return null;
  const n = points.length;
  const meanX = points.reduce((sum, point) => sum + point.atS, 0) / n;
  const meanY = points.reduce((sum, point) => sum + point.bytes, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const point of points) {
    covariance += (point.atS - meanX) * (point.bytes - meanY);
    variance += (point.atS - meanX) ** 2;
  }
  if (variance === 0) return null;
  const bytesPerSecond = covariance / variance;
  return { mbPerMinute: (bytesPerSecond * 60) / 1e6, meanMb: meanY / 1e6, samples: n };
}

/** The samples a slope is fitted over: those after the first quarter of the run. */
export function settledSamples(samples: readonly SoakSample[], seconds: number): SoakSample[] {
  return samples.filter((sample) => sample.atS >= seconds / 4);
}

export function rssSlope(samples: readonly SoakSample[], seconds: number): Slope | null {
  return slope(settledSamples(samples, seconds).map((sample) => ({ atS: sample.atS, bytes: sample.rssKiB * 1024 })));
}

export function heapUsedSlope(samples: readonly SoakSample[], seconds: number): Slope | null {
  const points = settledSamples(samples, seconds).flatMap((sample) =>
    sample.heapUsedBytes === null ? [] : [{ atS: sample.atS, bytes: sample.heapUsedBytes }],
  );
  return slope(points);
}

/** One gauge of a Prometheus text page (no labels), or null when absent. */
export function gauge(page: string, name: string): number | null {
  const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(page);
  return match === null ? null : Number(match[1]);
}

/** RSS now, in KiB. */
export function rssKiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`/proc/${pid}/status has no VmRSS.`);
  return Number(match[1]);
}

/** The gateway's heap gauges from /metrics; nulls when it cannot be read. */
export async function heapGauges(
  origin: string,
): Promise<Pick<SoakSample, 'heapUsedBytes' | 'heapTotalBytes' | 'externalBytes'>> {
  try {
    const response = await fetch(`${origin}/metrics`);
    if (!response.ok) return { heapUsedBytes: null, heapTotalBytes: null, externalBytes: null };
    const page = await response.text();
    return {
      heapUsedBytes: gauge(page, 'nodejs_heap_size_used_bytes'),
      heapTotalBytes: gauge(page, 'nodejs_heap_size_total_bytes'),
      externalBytes: gauge(page, 'nodejs_external_memory_bytes'),
    };
  } catch {
    return { heapUsedBytes: null, heapTotalBytes: null, externalBytes: null };
  }
}

/** Failure messages kept over the soak: enough to see the pattern. */
const KEPT_FAILURE_MESSAGES = 5;

/**
 * The load and the sampling: `clients` closed-loop workers per target client until `durationMs` has passed,
 * and `sample()` every `intervalMs` meanwhile (readings under load, not between rounds).
 */
export async function soak(
  targets: readonly { client: TargetClient; clients: number }[],
  durationMs: number,
  intervalMs: number,
  pid: number,
  origin: string,
  stop: AbortSignal,
): Promise<Pick<SoakReport, 'requests' | 'failures' | 'failureMessages' | 'samples'>> {
  const startedAt = performance.now();
  const deadline = startedAt + durationMs;
  let requests = 0;
  let sinceSample = 0;
  let failures = 0;
  const failureMessages: string[] = [];
  const samples: SoakSample[] = [];
  const worker = async (client: TargetClient): Promise<void> => {
    while (performance.now() < deadline && !stop.aborted) {
      const outcome = await client.send();
      requests++;
      sinceSample++;
      if (outcome.ok) continue;
      failures++;
      if (failureMessages.length < KEPT_FAILURE_MESSAGES) failureMessages.push(outcome.problem);
      await nextTurn();
    }
  };
  const sampler = async (): Promise<void> => {
    for (let next = startedAt + intervalMs; next <= deadline && !stop.aborted; next += intervalMs) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
      const rss = rssKiB(pid);
      const heap = await heapGauges(origin);
      samples.push({ atS: (performance.now() - startedAt) / 1000, rssKiB: rss, ...heap, requests: sinceSample });
      sinceSample = 0;
    }
  };
  await Promise.all([
    sampler(),
    ...targets.flatMap((target) => Array.from({ length: target.clients }, () => worker(target.client))),
  ]);
  return { requests, failures, failureMessages, samples };
}

export function describeMix(): string {
  return soakClients()
    .map(
      (entry) =>
        `${entry.clients} x ${entry.route} ${entry.shape.stream ? 'stream' : 'JSON'} (${ROUTES[entry.route].client} client)`,
    )
    .join(', ');
}

function mb(kib: number): string {
  return (kib / 1024).toFixed(1);
}

function slopeText(value: Slope | null): string {
  return value === null
    ? 'not enough samples'
    : `${value.mbPerMinute >= 0 ? '+' : ''}${value.mbPerMinute.toFixed(2)} MB/min (mean ${value.meanMb.toFixed(1)} MB, ${value.samples} samples)`;
}

export function formatSoak(report: SoakReport): string {
  const lines = [
    `soak: ${report.seconds} s, ${report.concurrency} clients: ${report.mix}`,
    `requests ${report.requests}, wrong ${report.failures}${report.failureMessages.length > 0 ? ` (${report.failureMessages.join(' | ')})` : ''}`,
    `   t(s)  RSS(MB)  heap used(MB)  heap total(MB)  external(MB)  req/s`,
  ];
  let previousAt = 0;
  for (const sample of report.samples) {
    const perSecond = sample.requests / Math.max(0.001, sample.atS - previousAt);
    previousAt = sample.atS;
    const opt = (bytes: number | null) => (bytes === null ? '-' : (bytes / 1048576).toFixed(1));
    lines.push(
      `${sample.atS.toFixed(0).padStart(7)}  ${mb(sample.rssKiB).padStart(7)}  ${opt(sample.heapUsedBytes).padStart(13)}  ${opt(sample.heapTotalBytes).padStart(14)}  ${opt(sample.externalBytes).padStart(12)}  ${perSecond.toFixed(0).padStart(5)}`,
    );
  }
  lines.push(`peak RSS (VmHWM) over the soak: ${mb(report.peakRssKiB)} MB`);
  lines.push(
    `slope after the first quarter: RSS ${slopeText(report.rssSlope)}; heap used ${slopeText(report.heapUsedSlope)}`,
  );
  return `${lines.join('\n')}\n`;
}
