import { describe, expect, it } from 'vitest';
import {
  anthropicRateLimitHeaders,
  formatResetDuration,
  formatResetTimestamp,
  openAiRateLimitHeaders,
} from './rate-limit-headers.js';
import type { RateLimitDecision } from './rate-limiter.js';

const refused: RateLimitDecision = { allowed: false, limit: 100, remaining: 0, resetMs: 47_655, retryAfterSeconds: 48 };
const allowed: RateLimitDecision = { allowed: true, limit: 100, remaining: 42, resetMs: 0, retryAfterSeconds: 0 };

describe('formatResetDuration', () => {
  it.each([
    [0, '0s'],
    [-5, '0s'],
    [12, '12ms'],
    [0.2, '1ms'],
    [999, '999ms'],
    [1_000, '1s'],
    [1_500, '1.5s'],
    [1_020, '1.02s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [360_000, '6m0s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
  ])('%d ms → %s', (ms, expected) => {
    expect(formatResetDuration(ms)).toBe(expected);
  });
});

describe('formatResetTimestamp', () => {
  it('is RFC 3339 UTC, rounded up to the whole second', () => {
    const now = Date.UTC(2025, 0, 1, 0, 0, 59, 500);
    expect(formatResetTimestamp(0, now)).toBe('2025-01-01T00:01:00Z');
    expect(formatResetTimestamp(500, now)).toBe('2025-01-01T00:01:00Z');
    expect(formatResetTimestamp(501, now)).toBe('2025-01-01T00:01:01Z');
    expect(formatResetTimestamp(47_655, now)).toBe('2025-01-01T00:01:48Z');
  });
});

describe('header maps', () => {
  it('OpenAI: x-ratelimit-* with a duration reset, retry-after only when refused', () => {
    expect(openAiRateLimitHeaders(refused)).toEqual({
      'x-ratelimit-limit-requests': '100',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '47.655s',
      'retry-after': '48',
    });
    expect(openAiRateLimitHeaders(allowed, 'tokens')).toEqual({
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '42',
      'x-ratelimit-reset-tokens': '0s',
    });
  });

  it('Anthropic: anthropic-ratelimit-* with an RFC 3339 reset', () => {
    const now = Date.UTC(2025, 5, 1, 12, 0, 0);
    expect(anthropicRateLimitHeaders(refused, 'requests', now)).toEqual({
      'anthropic-ratelimit-requests-limit': '100',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2025-06-01T12:00:48Z',
      'retry-after': '48',
    });
    expect(anthropicRateLimitHeaders(allowed, 'requests', now)).not.toHaveProperty('retry-after');
  });
});
