import { setTimeout as delay } from 'node:timers/promises';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest, VendorName } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import type { CredentialPool, CredentialStatus, PooledCredential } from './credential-pool.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from './types.js';
import { primeStream } from './stream-start.js';
import { WholeReply } from './whole-reply.js';
import { backoffDelayMs, classifyAttemptFailure, retryDelayMs } from './upstream-retry.js';
import type { RetryPolicy } from './upstream-settings.js';

export type ClosableAdapter = ProviderAdapter & { close(): Promise<void> };

export interface FailoverProviderOptions {
  pool: CredentialPool<ClosableAdapter>;
  retries: RetryPolicy;
  /**
   * How long a stream may take to its first output event and still be retried when it fails before it (see
   * primeStream); after that it is handed over and the client gets headers and keep-alives. Default 15 s.
   */
  streamStartWindowMs?: number;
  metrics?: GatewayMetrics;
  now?: () => number;
  random?: () => number;
}

type Job =
  | { kind: 'call'; call: ProviderCall }
  | { kind: 'count'; request: CanonicalRequest; model: CatalogModel; signal: AbortSignal };

/**
 * One vendor's adapter as the pipeline sees it: the same interface, over a pool of credentials, with retries.
 *
 * Every attempt happens before the pipeline hands anything to the client: `call` resolves with a stream once
 * its first output event arrived (or `streamStartWindowMs` passed), and with a complete, already-read reply for
 * non-stream requests, so a body that breaks, stalls or is malformed early is retried too. A failed attempt's
 * partial output is dropped with it. After the last attempt the last error is thrown, in the gateway catalog's
 * shape (429, 5xx with retry-after kept).
 */
export class FailoverProvider implements ProviderAdapter {
  readonly vendor: VendorName;
  private readonly pool: CredentialPool<ClosableAdapter>;
  private readonly retries: RetryPolicy;
  private readonly metrics: GatewayMetrics;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly streamStartWindowMs: number;
  /** Present when the vendor has a counting endpoint (the pipeline falls back to the tokenizer otherwise). */
  readonly countTokens?: (request: CanonicalRequest, model: CatalogModel, signal: AbortSignal) => Promise<number>;
  readonly countsLocally: boolean;

  constructor(options: FailoverProviderOptions) {
    this.pool = options.pool;
    this.vendor = options.pool.vendor;
    this.retries = options.retries;
    this.metrics = options.metrics ?? NO_METRICS;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.streamStartWindowMs = options.streamStartWindowMs ?? 15_000;
    const first = this.pool.targets()[0];
    this.countsLocally = first?.countsLocally === true;
    if (this.countsLocally) {
      // A local count needs no credential, retry or circuit breaker.
      this.countTokens = (request, model, signal) => first!.countTokens!(request, model, signal);
    } else if (first?.countTokens !== undefined) {
      this.countTokens = (request, model, signal) =>
        this.run<number>({ kind: 'count', request, model, signal }, signal);
    }
  }

  call(call: ProviderCall): Promise<ProviderResponse> {
    return this.run<ProviderResponse>({ kind: 'call', call }, call.signal);
  }

  credentialStatus(now: number): CredentialStatus[] {
    return this.pool.status(now);
  }

  async close(): Promise<void> {
    await Promise.all(this.pool.targets().map((adapter) => adapter.close()));
  }

  private async run<R extends ProviderResponse | number>(job: Job, signal: AbortSignal): Promise<R> {
    // The credentials this request failed on, in order: a retry goes to one it has not tried yet, if any is available.
    const tried: PooledCredential<ClosableAdapter>[] = [];
    // Read only when there is a choice: it may be computed on first read.
    const affinityKey = job.kind === 'call' && this.pool.size > 1 ? job.call.affinityKey : undefined;
    const trace = job.kind === 'call' ? job.call.trace : undefined;
    for (let attempt = 1; ; attempt++) {
      const credential = this.pool.pick(this.now(), tried, affinityKey);
      const startedAt = this.now();
      if (trace !== undefined) {
        const upstreamModel = (job as { call: ProviderCall }).call.model.upstreamModel;
        trace.attemptStarted({ vendor: this.vendor, credential: credential.label, number: attempt, upstreamModel });
      }
      try {
        const result = (await this.attempt(credential, job)) as R;
        this.pool.recordAttempt(credential, this.now() - startedAt, undefined, this.now());
        this.pool.succeeded(credential);
        return result;
      } catch (thrown) {
        trace?.attemptFailed(thrown);
        // Not an upstream failure (a request the adapter cannot build, a gateway bug) or the client left.
        if (!(thrown instanceof GatewayError) || signal.aborted) throw thrown;
        const wait = this.afterFailure(thrown, credential, attempt);
        if (wait === undefined) throw thrown;
        this.metrics.upstreamRetry(this.vendor);
        if (wait > 0) await pause(wait, signal);
        tried.push(credential);
      }
    }
  }

  /** Records a failed attempt; returns how long to wait before the next one, or undefined to give up. */
  private afterFailure(
    error: GatewayError,
    credential: PooledCredential<ClosableAdapter>,
    attempt: number,
  ): number | undefined {
    // A connection-level error carries undici's error as its cause; a vendor's status reply has none.
    const failure = classifyAttemptFailure(error, error.cause !== undefined);
    this.metrics.upstreamError(this.vendor, failure.reason);
    const now = this.now();
    this.pool.recordAttempt(credential, 0, failure.reason, now);
    if (failure.blamesCredential) this.pool.failed(credential, now);
    if (attempt >= this.retries.maxAttempts) return undefined;
    const alternative = this.pool.hasAlternative(now, credential);
    if (!failure.retryable) {
      // A refused credential (401/403): the same one will be refused again, another may work right away.
      return failure.blamesCredential && alternative ? 0 : undefined;
    }
    // Another credential is not bound by this one's `retry-after`; the plain backoff still spares the vendor.
    if (alternative) return backoffDelayMs(attempt, this.retries, this.random);
    return retryDelayMs(error, attempt, this.retries, this.random);
  }

  /**
   * One attempt on `credential`, which holds a slot of its deployment until the attempt is over: a stream's when
   * its events end (read to the end, failed, or closed by the pipeline), any other's when it returns or throws.
   */
  private async attempt(credential: PooledCredential<ClosableAdapter>, job: Job): Promise<ProviderResponse | number> {
    const adapter = credential.target;
    let streaming = false;
    try {
      if (job.kind === 'count') {
        // Only reached when the vendor's adapters count (see the constructor).
        return await adapter.countTokens!(job.request, job.model, job.signal);
      }
      const response = await adapter.call(job.call);
      if (job.call.request.stream) {
        const events = await primeStream(response.events, this.streamStartWindowMs, () =>
          this.pool.release(credential),
        );
        streaming = true;
        return { ...response, events };
      }
      return { ...response, events: await readAll(response.events) };
    } finally {
      if (!streaming) this.pool.release(credential);
    }
  }
}

/**
 * A non-stream reply's events, read to the end inside the attempt so a broken body can still be retried, and
 * handed on as a WholeReply with its events ready (the pipeline folds those in one go).
 */
async function readAll(events: ProviderResponse['events']): Promise<WholeReply> {
  if (events instanceof WholeReply) {
    await events.all();
    return events;
  }
  const all: CanonicalEvent[] = [];
  for await (const event of events) all.push(event);
  return WholeReply.of(all);
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch (error) {
    throw new GatewayError('upstream_unavailable', 'The request was cancelled.', { cause: error });
  }
}
