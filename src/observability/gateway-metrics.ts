import type { VendorName } from '../canonical/request.js';

/**
 * What the gateway reports about itself. Modules that see an event call these methods; the Prometheus
 * implementation (`prometheus-metrics.ts`) turns them into `/metrics`. Modules depend on this interface only,
 * so tests and the bench can pass `NO_METRICS`.
 */
export interface GatewayMetrics {
  /** One finished client request on an API route. `route` is the route pattern (`/v1/chat/completions`). */
  requestFinished(route: string, model: string, status: number, seconds: number): void;
  /** Time from the request's arrival to the first byte of model output sent to the client (streams). */
  timeToFirstToken(model: string, seconds: number): void;
  /** An upstream attempt that failed; `reason` is e.g. `connect`, `timeout`, `status_429`, `status_500`, `mid_stream`. */
  upstreamError(vendor: VendorName, reason: string): void;
  /** An upstream attempt that is retried (after an error, before anything reached the client). */
  upstreamRetry(vendor: VendorName): void;
  /** Tokens and cost of one settled request. */
  usageSettled(
    model: string,
    tokens: { input: number; output: number; cacheRead: number; cacheWrite: number },
    costNano: bigint,
  ): void;
  /** A request refused by the rate limiter (`requests` or `tokens` window). */
  rateLimitRefused(limit: 'requests' | 'tokens'): void;
  /** Reservations the sweeper released (their requests never settled: a crashed instance). */
  orphanedReservationsReleased(count: number): void;
  /** Holds of a dead instance the sweeper settled at their last checkpoint of delivered output (`instance_lost`). */
  orphanedReservationsSettled(count: number): void;
  /** A request for one more slice of output on a live hold: granted, or refused (the reply ends as a length stop). */
  outputSlice(model: string, granted: boolean): void;
  /**
   * Output the vendor produced after a refused slice, never delivered nor billed (the vendor's overrun,
   * docs/architecture.md#holds-that-grow).
   */
  unbilledTokens(model: string, tokens: number): void;
  /**
   * Reported usage a settlement could not charge (no free allowance, balance or key limit left for it): its tokens
   * and their cost at list price, nano-USD.
   */
  usageUnbilled(model: string, tokens: number, nanoUsd: bigint): void;
  /** The state of one upstream credential: 0 = healthy, 1 = cooling down (circuit open). */
  credentialState(vendor: VendorName, credential: string, coolingDown: boolean): void;
  /**
   * One attempt on one upstream credential (a deployment's is labelled `deployment/label`): `ok` or the failure's
   * reason, and for `ok` the seconds to the answer (first output of a stream, the whole reply otherwise).
   */
  upstreamAttempt(vendor: VendorName, credential: string, outcome: string, seconds: number | undefined): void;
  /**
   * Trace spans that never reached the OTLP collector: `queue_full` (the bounded export queue was full, so the span
   * was not kept) or `export_failed` (the collector refused or could not be reached after the exporter's retries).
   */
  telemetrySpansDropped(reason: 'queue_full' | 'export_failed', count: number): void;
  /** The same attempt counted for the operator's deployment it went to (`ok` or the failure's reason). */
  deploymentAttempt(deployment: string, outcome: string, seconds: number | undefined): void;
}

/** A deployment's circuit: `half_open` once a cool-down is over and a probe may go through. */
export type DeploymentCircuit = 'closed' | 'open' | 'half_open';

/** A deployment's live state on this instance, read at scrape time. */
export interface DeploymentHealth {
  deployment: string;
  /** Upstream requests in flight (streams until their last event). */
  inFlight: number;
  state: DeploymentCircuit;
}

export const NO_METRICS: GatewayMetrics = {
  requestFinished() {},
  timeToFirstToken() {},
  upstreamError() {},
  upstreamRetry() {},
  usageSettled() {},
  rateLimitRefused() {},
  orphanedReservationsReleased() {},
  orphanedReservationsSettled() {},
  outputSlice() {},
  unbilledTokens() {},
  usageUnbilled() {},
  credentialState() {},
  upstreamAttempt() {},
  telemetrySpansDropped() {},
  deploymentAttempt() {},
};
