import { describe, expect, it } from 'vitest';
import { emptyUsage } from '../canonical/usage.js';
import { implausibleUsage } from './usage-sanity.js';

const BOUNDS = { maxOutputTokens: 1_000, contextWindow: 200_000 };

describe('implausibleUsage', () => {
  it('accepts usage within the request limit and the context window', () => {
    expect(
      implausibleUsage({ ...emptyUsage(), inputTokens: 199_000, cacheReadTokens: 1_000, outputTokens: 1_000 }, BOUNDS),
    ).toBeUndefined();
  });

  it.each([
    [{ outputTokens: -1 }, /outputTokens is -1/],
    [{ inputTokens: 2.5 }, /inputTokens is 2.5/],
    [{ cacheReadTokens: undefined as unknown as number }, /cacheReadTokens is undefined/],
    [{ outputTokens: 1_001 }, /exceeds the request's limit of 1000/],
    [{ inputTokens: 150_000, cacheWriteTokens: 50_001 }, /200001 prompt tokens exceed the context window/],
    [{ cacheWriteTokens: 1, cacheWrite1hTokens: 2 }, /cacheWrite1hTokens exceeds/],
  ])('refuses %o', (fields, reason) => {
    expect(implausibleUsage({ ...emptyUsage(), ...fields }, BOUNDS)).toMatch(reason);
  });
});
