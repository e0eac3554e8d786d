/**
 * How the gateway treats one vendor's upstream: timeouts per attempt, retries before anything reached the
 * client, and the circuit breaker that cools down a failing credential. Defaults suit real vendors (reasoning
 * models may think for a long time before their first byte); tests set them small.
 */

export interface UpstreamTimeouts {
  /** Establishing the TCP/TLS connection. */
  connectMs: number;
  /** Stream requests: from sending the request to the response headers. */
  firstByteMs: number;
  /**
   * Non-stream requests (and token counts): from sending the request to the response headers. A vendor sends
   * a non-stream reply whole, when the model has finished, so this bounds the whole generation.
   */
  nonStreamMs: number;
  /** Longest silence while the response body arrives (between stream chunks). */
  idleMs: number;
}

export interface RetryPolicy {
  /** Attempts per request, the first included (1 = no retries). */
  maxAttempts: number;
  /** Backoff before the first retry; doubled per retry, with jitter. */
  baseDelayMs: number;
  /** Cap of the backoff, and the longest vendor `retry-after` the gateway waits out itself. */
  maxDelayMs: number;
}

export interface CircuitBreakerPolicy {
  /** Consecutive failures (401/403/429/5xx, connection errors, timeouts) that cool a credential down. */
  failureThreshold: number;
  /** How long a cooled-down credential gets no traffic while others are available. */
  cooldownMs: number;
  /** The longest cool-down after failed probes (each doubles it); default 16 × `cooldownMs`. */
  maxCooldownMs?: number;
}

export interface UpstreamPolicy {
  timeouts: UpstreamTimeouts;
  retries: RetryPolicy;
  circuitBreaker: CircuitBreakerPolicy;
}

export const DEFAULT_UPSTREAM_POLICY: UpstreamPolicy = Object.freeze({
  timeouts: Object.freeze({ connectMs: 10_000, firstByteMs: 60_000, nonStreamMs: 600_000, idleMs: 60_000 }),
  retries: Object.freeze({ maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 5_000 }),
  circuitBreaker: Object.freeze({ failureThreshold: 5, cooldownMs: 30_000 }),
});

/** One credential of a vendor, as configured. */
export interface UpstreamCredential {
  apiKey: string;
  baseUrl: string;
  /** Shown in metrics and the operator view; never the key itself. */
  label: string;
}

/** One vendor's upstream as the operator configured it. */
export interface VendorConfig {
  apiKey: string | undefined;
  baseUrl: string;
  /** True when the operator gave a key or a base URL: the vendor is meant to be reached. */
  configured: boolean;
  /** Every credential requests are spread over (at least one when configured; keyless ones carry no key). */
  credentials: readonly (Omit<UpstreamCredential, 'apiKey'> & { apiKey: string | undefined })[];
  timeouts: UpstreamTimeouts;
  retries: RetryPolicy;
  circuitBreaker: CircuitBreakerPolicy;
}

/** A named deployment (`deployments.<name>`): one base URL and its credentials, in a family's vendor protocol. */
export interface DeploymentConfig extends VendorConfig {
  name: string;
  family: 'alpha' | 'beta' | 'gamma' | 'delta';
  /** Share of a model's requests relative to the other deployments serving it. */
  weight: number;
  /** Requests per minute at most, shared by its credentials (undefined: no limit). */
  rpm: number | undefined;
  /** Upstream requests in flight at once on this instance, shared by its credentials (undefined: no limit). */
  maxConcurrent: number | undefined;
}
