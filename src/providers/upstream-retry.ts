import type { GatewayError } from '../canonical/errors.js';
import type { RetryPolicy } from './upstream-settings.js';

/** How the gateway reacts to one failed upstream attempt. */
export interface AttemptFailure {
  /** Another attempt may succeed (connection errors, timeouts, 429, 5xx, a broken reply). */
  retryable: boolean;
  /** The failure says something about the credential or its endpoint: it counts towards the circuit breaker. */
  blamesCredential: boolean;
  /** The metrics label (`connect`, `timeout`, `status_429`, …). */
  reason: string;
}

/**
 * Classifies by the gateway error code the adapters derived from the vendor's status
 * (docs/protocols/translation.md#errors): 401/403 are the credential's fault (another credential may work, the same one
 * will not); 4xx caused by the request are never retried, and never blamed on the credential.
 */
export function classifyAttemptFailure(error: GatewayError, connectionFailure: boolean): AttemptFailure {
  switch (error.code) {
    case 'upstream_rate_limited':
      return { retryable: true, blamesCredential: true, reason: 'status_429' };
    case 'upstream_server_error':
      return { retryable: true, blamesCredential: true, reason: 'status_5xx' };
    case 'upstream_unavailable':
      return { retryable: true, blamesCredential: true, reason: connectionFailure ? 'connect' : 'status_503' };
    case 'upstream_timeout':
      return { retryable: true, blamesCredential: true, reason: 'timeout' };
    case 'upstream_bad_response':
      return { retryable: true, blamesCredential: true, reason: 'bad_response' };
    case 'upstream_auth_failed':
      return { retryable: false, blamesCredential: true, reason: 'auth' };
    default:
      return { retryable: false, blamesCredential: false, reason: error.code.replace(/^upstream_/, '') };
  }
}

/**
 * Exponential backoff with "equal jitter": half the capped exponential delay, plus a random part of the other
 * half. The fixed half keeps retries from hammering a struggling vendor; the random half spreads the clients
 * that failed together.
 */
export function backoffDelayMs(retryNumber: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retryNumber - 1));
  return Math.round(exponential / 2 + random() * (exponential / 2));
}

/**
 * The wait before retrying on the same credential after `error`: the vendor's `retry-after` when it gave one
 * (undefined when that is longer than the policy lets the gateway wait: the client gets the 429 instead),
 * the backoff otherwise.
 */
export function retryDelayMs(
  error: GatewayError,
  retryNumber: number,
  policy: RetryPolicy,
  random?: () => number,
): number | undefined {
  const backoff = backoffDelayMs(retryNumber, policy, random);
  if (error.retryAfterSeconds === undefined) return backoff;
  const vendorWait = error.retryAfterSeconds * 1000;
  if (vendorWait > policy.maxDelayMs) return undefined;
  return Math.max(backoff, vendorWait);
}
