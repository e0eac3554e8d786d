import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import { backoffDelayMs, classifyAttemptFailure, retryDelayMs } from './upstream-retry.js';

const policy = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1_000 };

describe('backoff', () => {
  it('doubles per retry up to the cap, with half of it random', () => {
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, policy, () => 0))).toEqual([50, 100, 200, 400, 500]);
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, policy, () => 1))).toEqual([100, 200, 400, 800, 1_000]);
  });

  it("honours the vendor's retry-after when the policy lets the gateway wait that long", () => {
    const limited = (seconds: number) =>
      new GatewayError('upstream_rate_limited', 'slow down', { retryAfterSeconds: seconds });
    expect(retryDelayMs(limited(1), 1, policy, () => 0)).toBe(1_000);
    expect(retryDelayMs(limited(0), 2, policy, () => 0)).toBe(100);
    // Longer than maxDelayMs: the client gets the 429 and its retry-after instead.
    expect(retryDelayMs(limited(2), 1, policy, () => 0)).toBeUndefined();
  });
});

describe('classifyAttemptFailure', () => {
  it('retries connection errors, timeouts, 429 and 5xx, and blames the credential for them', () => {
    for (const code of [
      'upstream_rate_limited',
      'upstream_server_error',
      'upstream_unavailable',
      'upstream_timeout',
      'upstream_bad_response',
    ] as const) {
      expect(classifyAttemptFailure(new GatewayError(code, 'x'), false)).toMatchObject({
        retryable: true,
        blamesCredential: true,
      });
    }
    expect(classifyAttemptFailure(new GatewayError('upstream_unavailable', 'x'), true).reason).toBe('connect');
  });

  it('a refused credential is blamed but not retried on itself; request errors are neither', () => {
    expect(classifyAttemptFailure(new GatewayError('upstream_auth_failed', 'x'), false)).toMatchObject({
      retryable: false,
      blamesCredential: true,
    });
    for (const code of [
      'upstream_invalid_request',
      'upstream_not_found',
      'upstream_payload_too_large',
      'internal_error',
    ] as const) {
      expect(classifyAttemptFailure(new GatewayError(code, 'x'), false)).toMatchObject({
        retryable: false,
        blamesCredential: false,
      });
    }
  });
});
