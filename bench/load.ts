/**
 * The load generator: closed-loop workers (each sends its next request when the previous one is done)
 * over an undici Pool per target. undici rather than fetch because fetch's own overhead per request is
 * large enough to hide the gateway's.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { REPLY_CHUNKS, replyText } from './mock-reply.js';
import { jsonReplyProblem, snippet, StreamCheck } from './response-checks.js';
import { requestBodyParts, type RequestShape, type Scenario, type Target, type TargetName } from './scenarios.js';
import { SampleList } from './stats.js';

/** No single request may hang a round: beyond this it counts as a failure. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Failure messages kept per round: enough to see the pattern, not every copy of it. */
const KEPT_FAILURE_MESSAGES = 5;

export type Outcome =
  | { ok: true; latencyMs: number; ttftMs: number | undefined; bunchedDeltas: number }
  | { ok: false; latencyMs: number; problem: string; status: number | undefined };

/** One target's connection pool and its request bodies (split around the per-request nonce). */
export class TargetClient {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;
  private readonly bodies: { before: string; after: string };
  private sent = 0;

  constructor(
    readonly target: Target,
    connections: number,
    private readonly scenario: RequestShape,
    private readonly noncePrefix: string,
    /** How long a reply may keep the client waiting (for its headers, or between body chunks). */
    timeoutMs = REQUEST_TIMEOUT_MS,
  ) {
    this.pool = new Pool(target.origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    this.headers =
      target.protocol === 'openai'
        ? { 'content-type': 'application/json', authorization: `Bearer ${target.apiKey}` }
        : { 'content-type': 'application/json', 'x-api-key': target.apiKey, 'anthropic-version': '2023-06-01' };
    this.bodies = requestBodyParts(target, scenario.stream, scenario.paceMs, scenario);
  }

  /**
   * Sends one request and checks the answer; never throws (a failure is an outcome). For paced streams,
   * `bunchedDeltas` counts content deltas that arrived less than half a pace after the one before: chunks
   * the mock sent apart but something held back and delivered together.
   */
  async send(): Promise<Outcome> {
    const nonce = `${this.noncePrefix}${(this.sent++).toString(36)}`;
    const { stream, paceMs } = this.scenario;
    const chunks = this.scenario.chunks ?? REPLY_CHUNKS;
    const startedAt = performance.now();
    let status: number | undefined;
    try {
      const response = await this.pool.request({
        method: 'POST',
        path: this.target.path,
        headers: this.headers,
        body: this.bodies.before + nonce + this.bodies.after,
      });
      status = response.statusCode;
      if (status !== 200) {
        const text = await response.body.text();
        return {
          ok: false,
          latencyMs: performance.now() - startedAt,
          status,
          problem: `status ${status}: ${snippet(text)}`,
        };
      }
      if (!stream) {
        const problem = jsonReplyProblem(
          this.target.protocol,
          await response.body.text(),
          replyText(nonce, chunks),
          chunks,
        );
        const latencyMs = performance.now() - startedAt;
        return problem === undefined
          ? { ok: true, latencyMs, ttftMs: undefined, bunchedDeltas: 0 }
          : { ok: false, latencyMs, status, problem };
      }
      const check = new StreamCheck(this.target.protocol, replyText(nonce, chunks), chunks);
      let ttftMs: number | undefined;
      let lastDeltaAt = 0;
      let bunchedDeltas = 0;
      for await (const piece of response.body as AsyncIterable<Buffer>) {
        const deltas = check.push(piece);
        if (deltas === 0) continue;
        const now = performance.now();
        if (ttftMs === undefined) ttftMs = now - startedAt;
        else if (paceMs > 0 && now - lastDeltaAt < paceMs / 2) bunchedDeltas++;
        if (paceMs > 0) bunchedDeltas += deltas - 1;
        lastDeltaAt = now;
      }
      const problem = check.finish();
      const latencyMs = performance.now() - startedAt;
      return problem === undefined
        ? { ok: true, latencyMs, ttftMs, bunchedDeltas }
        : { ok: false, latencyMs, status, problem };
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { ok: false, latencyMs: performance.now() - startedAt, status, problem: message };
    }
  }

  /** Ends every connection at once, requests in flight included (the bench is stopping). */
  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}

export interface RoundResult {
  target: TargetName;
  /** Completed requests, successful or not. */
  requests: number;
  failures: number;
  /** From the first request sent to the last answer read. */
  elapsedMs: number;
  /** Total request time of successful requests. */
  latencies: SampleList;
  /** Time to first content delta of successful streams. */
  ttfts: SampleList;
  /** Paced streams: content deltas that arrived bunched with the one before (see TargetClient.send). */
  bunchedDeltas: number;
  /** Failures by HTTP status ("no status" when the connection failed). */
  failuresByStatus: Record<string, number>;
  failureMessages: string[];
}

/**
 * Runs `scenario.concurrency` workers against one target for `durationMs`. Workers stop starting requests
 * at the deadline (or when `stop` fires) and the round ends when the last one in flight is answered, so
 * every request counted was measured whole.
 */
export async function runRound(
  client: TargetClient,
  scenario: Pick<Scenario, 'concurrency'> & Partial<Pick<Scenario, 'startSpreadMs'>>,
  durationMs: number,
  stop: AbortSignal,
): Promise<RoundResult> {
  const result: RoundResult = {
    target: client.target.name,
    requests: 0,
    failures: 0,
    elapsedMs: 0,
    latencies: new SampleList(),
    ttfts: new SampleList(),
    bunchedDeltas: 0,
    failuresByStatus: {},
    failureMessages: [],
  };
  const startedAt = performance.now();
  const deadline = startedAt + durationMs;
  const spreadMs = scenario.startSpreadMs ?? 0;
  const worker = async (_: unknown, index: number): Promise<void> => {
    if (spreadMs > 0) await sleep((index * spreadMs) / scenario.concurrency);
    while (performance.now() < deadline && !stop.aborted) {
      const outcome = await client.send();
      result.requests++;
      if (outcome.ok) {
        result.latencies.push(outcome.latencyMs);
        if (outcome.ttftMs !== undefined) result.ttfts.push(outcome.ttftMs);
        result.bunchedDeltas += outcome.bunchedDeltas;
        continue;
      }
      result.failures++;
      const status = outcome.status === undefined ? 'no status' : String(outcome.status);
      result.failuresByStatus[status] = (result.failuresByStatus[status] ?? 0) + 1;
      if (result.failureMessages.length < KEPT_FAILURE_MESSAGES) result.failureMessages.push(outcome.problem);
      // A failure can come back without any I/O (a destroyed pool rejects at once): without this yield a
      // worker would spin on microtasks and starve timers, signals and child-process events.
      await nextTurn();
    }
  };
  await Promise.all(Array.from({ length: scenario.concurrency }, worker));
  result.elapsedMs = performance.now() - startedAt;
  return result;
}
