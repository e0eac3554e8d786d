/**
 * The c10k mode (`npm run bench -- --c10k`): one proxy (the gateway, then the floor) holds many slow streams open
 * at once, one chunk a second each, as a vendor's long answers would, and the mode reads what that costs:
 *
 * - **memory**: the proxy's RSS while the streams are open (the median of one reading a second) less its RSS at
 *   rest before them, per open stream;
 * - **a new request meanwhile**: short streams sent one after another, alternately through the proxy and to the
 *   mock directly, while the slow ones flow: the proxy's p99 time to first token less the direct one's;
 * - **each chunk's delay**: the mock stamps every content delta with its wall clock when it writes it
 *   (`stamp-chunks`), the client reads the clock when the delta arrives; the worst delay through the gateway less
 *   the worst through the floor is what the gateway adds.
 *
 * The streams open a few dozen at a time (opening is not what is measured), then every stream's chunks are read
 * for the hold. A stream is long enough to outlast the run and is cut when the run ends.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Pool } from 'undici';
import { TargetClient } from './load.js';
import { chunkStamps } from './mock-reply.js';
import type { C10kOptions } from './options.js';
import { memory } from './processes.js';
import { requestBodyParts, type Target } from './scenarios.js';
import { distribution, percentile, SampleList } from './stats.js';

/** One chunk a second: a slow vendor's pace, so the proxy holds streams rather than moves bytes. */
export const C10K_PACE_MS = 1_000;
/** Content deltas per slow stream: an hour at one a second, longer than any run; the run cuts them. */
const SLOW_STREAM_CHUNKS = 3_600;
/** Streams that may be opening at once. */
const OPENING_AT_ONCE = 50;
/** A stream must send its first chunk within this, or it counts as failed to open. */
const OPEN_TIMEOUT_MS = 60_000;
/** After the last stream opened, before the hold's readings start: let the opening's garbage go. */
const SETTLE_MS = 3_000;
/** Failure messages kept: enough to see the pattern. */
const KEPT_MESSAGES = 5;
/** File descriptors a process needs besides its connections (modules, logs, the database, the pool's spare). */
const SPARE_DESCRIPTORS = 512;

/** The targets the c10k report judges, with the limits the issue set. */
export const C10K_LIMITS = { rssPerStreamKB: 20, addedTtftP99Ms: 5, addedChunkDelayMs: 100 } as const;

export interface C10kTargetResult {
  target: 'gateway' | 'floor';
  streams: number;
  /** Streams whose first chunk arrived. */
  opened: number;
  failures: number;
  failureMessages: string[];
  openSeconds: number;
  idleRssKiB: number;
  /** Median of the readings taken once a second over the hold. */
  openRssKiB: number;
  /** (openRssKiB - idleRssKiB) / opened, in KB (1,000 bytes). */
  rssPerStreamKB: number;
  /** CPU of the proxy over the hold, in cores: what holding the streams costs while they trickle. */
  holdCores: number;
  probes: { count: number; ttftP50Ms: number; ttftP99Ms: number; directP50Ms: number; directP99Ms: number };
  /** Delay of each content delta during the hold, mock's write to client's read. */
  chunkDelays: { count: number; p50Ms: number; p99Ms: number; worstMs: number };
}

export interface C10kReport {
  startedAt: string;
  finishedAt: string;
  options: C10kOptions;
  environment: { node: string; cpuModel: string; cpuCount: number; loadAverageAtStart: number; fileLimit: string };
  results: C10kTargetResult[];
}

/** Descriptors a proxy holding `streams` needs: one connection in and one out per stream, and its own. */
export function descriptorsNeeded(streams: number): number {
  return 2 * streams + SPARE_DESCRIPTORS;
}

/** Why `streams` cannot be held under a hard file limit of `hardLimit` (undefined: it can). */
export function fileLimitProblem(streams: number, hardLimit: number): string | undefined {
  const needed = descriptorsNeeded(streams);
  if (needed <= hardLimit) return undefined;
  const most = Math.floor((hardLimit - SPARE_DESCRIPTORS) / 2);
  return (
    `${streams} streams need ${needed} open files in the proxy (one connection in and one out per stream), above ` +
    `this machine's hard limit of ${hardLimit} (ulimit -Hn); run with --c10k-streams ${most} or raise the limit`
  );
}

/** Reads one slow stream's body: its first delta opens it; each stamped delta after that is a delay sample. */
export class StampReader {
  private pending = '';
  opened = false;

  /** Feeds a piece of the body; returns the send stamps of the events it completed. */
  push(piece: string): number[] {
    this.pending += piece;
    const end = this.pending.lastIndexOf('\n\n');
    if (end === -1) return [];
    const complete = this.pending.slice(0, end);
    this.pending = this.pending.slice(end + 2);
    // The first delta ("Reply <nonce>:") carries no stamp; any content at all means the stream is flowing.
    if (!this.opened && /"(content|text)":"[^"]/.test(complete)) this.opened = true;
    return chunkStamps(complete);
  }
}

/** The wall clock in ms since the epoch with sub-ms precision, the same clock the mock stamps with. */
function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface C10kTarget {
  target: Target;
  /** The proxy's process, whose RSS and CPU are read. */
  pid: number;
  name: 'gateway' | 'floor';
}

export interface C10kDependencies {
  /** The mock in the route's vendor protocol, for the probes' direct turns. */
  direct: Target;
  cpuTicks(pid: number): number;
  ticksPerSecond: number;
  stop: AbortSignal;
  progress(message: string): void;
}

/** Holds `options.streams` slow streams open through one proxy and reads the figures above. */
export async function measureC10k(
  proxy: C10kTarget,
  options: C10kOptions,
  deps: C10kDependencies,
): Promise<C10kTargetResult> {
  const idleRssKiB = memory(proxy.pid).rssKiB;
  const pool = new Pool(proxy.target.origin, {
    connections: options.streams,
    pipelining: 1,
    keepAliveTimeout: 600_000,
    headersTimeout: OPEN_TIMEOUT_MS,
    bodyTimeout: OPEN_TIMEOUT_MS,
  });
  const headers =
    proxy.target.protocol === 'openai'
      ? { 'content-type': 'application/json', authorization: `Bearer ${proxy.target.apiKey}` }
      : { 'content-type': 'application/json', 'x-api-key': proxy.target.apiKey, 'anthropic-version': '2023-06-01' };
  const body = requestBodyParts(proxy.target, true, C10K_PACE_MS, { chunks: SLOW_STREAM_CHUNKS, stamp: true });
  const delays = new SampleList();
  let holding = false;
  let stopping = false;
  let opened = 0;
  let failures = 0;
  const failureMessages: string[] = [];
  const fail = (message: string): void => {
    failures++;
    if (failureMessages.length < KEPT_MESSAGES) failureMessages.push(message);
  };

  /** One slow stream: resolves `whenOpen` at its first delta, then reads until the run cuts it. */
  const slowStream = (index: number, whenOpen: () => void): Promise<void> =>
    (async () => {
      const reader = new StampReader();
      let announced = false;
      try {
        const response = await pool.request({
          method: 'POST',
          path: proxy.target.path,
          headers,
          body: `${body.before}k${proxy.name[0]}${index.toString(36)}${body.after}`,
        });
        if (response.statusCode !== 200) {
          fail(`status ${response.statusCode}: ${(await response.body.text()).slice(0, 200)}`);
          return;
        }
        for await (const piece of response.body as AsyncIterable<Buffer>) {
          const receivedAt = wallClockMs();
          const stamps = reader.push(piece.toString('utf8'));
          if (reader.opened && !announced) {
            announced = true;
            opened++;
            whenOpen();
          }
          if (holding) for (const sentAt of stamps) delays.push(receivedAt - sentAt);
        }
        if (!stopping) fail('the stream ended before the run did');
      } catch (error) {
        if (!stopping) fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      } finally {
        if (!announced) whenOpen();
      }
    })();

  const streams: Promise<void>[] = [];
  const openStartedAt = performance.now();
  try {
    // Opening: at most OPENING_AT_ONCE streams waiting for their first delta at a time.
    let next = 0;
    const opener = async (): Promise<void> => {
      while (next < options.streams && !deps.stop.aborted) {
        const index = next++;
        await new Promise<void>((resolve) => streams.push(slowStream(index, resolve)));
        if (index % 1000 === 999) deps.progress(`  ${proxy.name}: ${index + 1} streams open`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, options.streams) }, opener));
    deps.stop.throwIfAborted();
    const openSeconds = (performance.now() - openStartedAt) / 1000;
    deps.progress(
      `  ${proxy.name}: ${opened} of ${options.streams} streams open in ${openSeconds.toFixed(1)} s; holding them ${options.holdSeconds} s`,
    );
    await delay(SETTLE_MS);
    holding = true;
    const ticksBefore = deps.cpuTicks(proxy.pid);
    const holdStartedAt = performance.now();
    const rss: number[] = [];
    const sampler = (async () => {
      while (holding) {
        rss.push(memory(proxy.pid).rssKiB);
        await delay(1_000);
      }
    })();
    const probes = await runProbes(proxy.target, deps.direct, options, deps.stop);
    const remaining = options.holdSeconds * 1000 - (performance.now() - holdStartedAt);
    if (remaining > 0) await delay(remaining);
    holding = false;
    await sampler;
    const holdSeconds = (performance.now() - holdStartedAt) / 1000;
    const holdCores = (deps.cpuTicks(proxy.pid) - ticksBefore) / deps.ticksPerSecond / holdSeconds;
    const sortedRss = Float64Array.from(rss).sort();
    const openRssKiB = percentile(sortedRss, 0.5);
    const chunkDelays = distribution(delays);
    return {
      target: proxy.name,
      streams: options.streams,
      opened,
      failures,
      failureMessages,
      openSeconds,
      idleRssKiB,
      openRssKiB,
      rssPerStreamKB: opened === 0 ? Number.NaN : ((openRssKiB - idleRssKiB) * 1024) / 1000 / opened,
      holdCores,
      probes,
      chunkDelays: {
        count: chunkDelays.count,
        p50Ms: chunkDelays.p50,
        p99Ms: chunkDelays.p99,
        worstMs: chunkDelays.max,
      },
    };
  } finally {
    stopping = true;
    holding = false;
    await pool.destroy();
    await Promise.allSettled(streams);
  }
}

/**
 * New short streams (20 chunks, unpaced) one after another, alternately through the proxy and to the mock, spread
 * over the hold: their times to first token, checked exact as in the timed scenarios.
 */
async function runProbes(
  proxy: Target,
  direct: Target,
  options: C10kOptions,
  stop: AbortSignal,
): Promise<C10kTargetResult['probes']> {
  const shape = { stream: true, paceMs: 0 };
  const clients = [new TargetClient(proxy, 1, shape, 'kp'), new TargetClient(direct, 1, shape, 'kd')];
  const ttfts = [new SampleList(), new SampleList()];
  const gapMs = (options.holdSeconds * 1000) / options.probes / 2;
  try {
    for (let i = 0; i < options.probes * 2 && !stop.aborted; i++) {
      // Alternating which goes first, so neither always follows the other's reply.
      const which = (i + Math.floor(i / 2)) % 2;
      const client = clients[which] as TargetClient;
      const startedAt = performance.now();
      const outcome = await client.send();
      if (!outcome.ok) throw new Error(`c10k probe to ${client.target.name}: ${outcome.problem}`);
      if (outcome.ttftMs !== undefined) ttfts[which]?.push(outcome.ttftMs);
      const rest = gapMs - (performance.now() - startedAt);
      if (rest > 0) await delay(rest);
    }
  } finally {
    for (const client of clients) await client.destroy();
  }
  const [through, straight] = ttfts.map((samples) => distribution(samples as SampleList));
  return {
    count: through?.count ?? 0,
    ttftP50Ms: through?.p50 ?? Number.NaN,
    ttftP99Ms: through?.p99 ?? Number.NaN,
    directP50Ms: straight?.p50 ?? Number.NaN,
    directP99Ms: straight?.p99 ?? Number.NaN,
  };
}

export interface C10kVerdict {
  target: string;
  measured: string;
  pass: boolean | null;
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** The three targets, judged on the gateway's figures; the floor's beside them (the chunk delay is less the floor's). */
export function judgeC10k(results: readonly C10kTargetResult[]): C10kVerdict[] {
  const gateway = results.find((result) => result.target === 'gateway');
  const floor = results.find((result) => result.target === 'floor');
  if (gateway === undefined) return [{ target: 'the gateway holds the streams', measured: 'not measured', pass: null }];
  const allOpen = gateway.opened === gateway.streams && gateway.failures === 0;
  const added = gateway.probes.ttftP99Ms - gateway.probes.directP99Ms;
  const floorAdded = floor === undefined ? undefined : floor.probes.ttftP99Ms - floor.probes.directP99Ms;
  const chunkAdded = floor === undefined ? Number.NaN : gateway.chunkDelays.worstMs - floor.chunkDelays.worstMs;
  const judged = (value: number, limit: number): boolean | null => (Number.isFinite(value) ? value <= limit : null);
  return [
    {
      target: `${gateway.streams} streams open at once`,
      measured: `${gateway.opened} open, ${gateway.failures} failed${floor === undefined ? '' : ` (floor ${floor.opened} open, ${floor.failures} failed)`}`,
      pass: allOpen,
    },
    {
      target: `RSS per open stream <= ${C10K_LIMITS.rssPerStreamKB} KB`,
      measured: `${fixed(gateway.rssPerStreamKB, 1)} KB${floor === undefined ? '' : ` (floor ${fixed(floor.rssPerStreamKB, 1)} KB)`}`,
      pass: judged(gateway.rssPerStreamKB, C10K_LIMITS.rssPerStreamKB),
    },
    {
      target: `added TTFT p99 of a new request <= ${C10K_LIMITS.addedTtftP99Ms} ms`,
      measured: `${added >= 0 ? '+' : ''}${fixed(added, 2)} ms${floorAdded === undefined ? '' : ` (floor ${floorAdded >= 0 ? '+' : ''}${fixed(floorAdded, 2)} ms)`}`,
      pass: judged(added, C10K_LIMITS.addedTtftP99Ms),
    },
    {
      target: `worst chunk delay, less the floor's <= ${C10K_LIMITS.addedChunkDelayMs} ms`,
      measured:
        floor === undefined
          ? `gateway's worst ${fixed(gateway.chunkDelays.worstMs, 1)} ms (no floor to subtract)`
          : `${fixed(chunkAdded, 1)} ms (gateway's worst ${fixed(gateway.chunkDelays.worstMs, 1)} ms, floor's ${fixed(floor.chunkDelays.worstMs, 1)} ms)`,
      pass: judged(chunkAdded, C10K_LIMITS.addedChunkDelayMs),
    },
  ];
}

/** The per-target lines and the verdicts. */
export function formatC10k(report: C10kReport): string {
  const lines = [
    `c10k: ${report.options.streams} slow streams (one chunk a second) held ${report.options.holdSeconds} s, ${report.options.probes} new requests meanwhile; file limit ${report.environment.fileLimit}`,
  ];
  for (const result of report.results) {
    lines.push(
      `${result.target.padEnd(8)} ${result.opened}/${result.streams} open in ${fixed(result.openSeconds, 1)} s; ` +
        `RSS ${fixed(result.idleRssKiB / 1024, 1)} MB at rest, ${fixed(result.openRssKiB / 1024, 1)} MB holding: ${fixed(result.rssPerStreamKB, 1)} KB per stream; ` +
        `${fixed(result.holdCores, 2)} cores holding; new-request TTFT p50/p99 ${fixed(result.probes.ttftP50Ms, 2)}/${fixed(result.probes.ttftP99Ms, 2)} ms ` +
        `(direct ${fixed(result.probes.directP50Ms, 2)}/${fixed(result.probes.directP99Ms, 2)} ms); chunk delay p50/p99/worst ` +
        `${fixed(result.chunkDelays.p50Ms, 1)}/${fixed(result.chunkDelays.p99Ms, 1)}/${fixed(result.chunkDelays.worstMs, 1)} ms over ${result.chunkDelays.count} chunks`,
    );
    if (result.failureMessages.length > 0) lines.push(`         failures: ${result.failureMessages.join(' | ')}`);
  }
  lines.push('', `${'target'.padEnd(52)}${'measured'.padEnd(70)}met`);
  for (const verdict of judgeC10k(report.results)) {
    const met = verdict.pass === null ? '-' : verdict.pass ? 'yes' : 'FAIL';
    lines.push(`${verdict.target.padEnd(52)}${verdict.measured.padEnd(70)}${met}`);
  }
  return `${lines.join('\n')}\n`;
}
