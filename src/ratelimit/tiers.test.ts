import { describe, expect, it } from 'vitest';
import { DEFAULT_TIERS, resolveTier, tiersSchema } from './tiers.js';

describe('tiersSchema', () => {
  it('defaults to standard 100, pro 1,000 (self-serve: $50 paid in total, or $20 per 30 days), enterprise 10,000 requests per minute, no token limit', () => {
    expect(tiersSchema.parse(undefined)).toEqual({
      standard: { requestsPerMinute: 100 },
      pro: {
        requestsPerMinute: 1_000,
        upgrade: { atTotalPaidNano: 50_000_000_000n, priceNano: 20_000_000_000n, periodDays: 30 },
      },
      enterprise: { requestsPerMinute: 10_000 },
    });
  });

  it('reads how a tier is reached: total paid and/or a price per period, in USD', () => {
    const tiers = tiersSchema.parse({
      team: { requestsPerMinute: 500, reachedAtTotalPaidUsd: '100', priceUsd: 19.99, periodDays: 7 },
      gold: { requestsPerMinute: 900, priceUsd: '5' },
    });
    expect(tiers['team']).toEqual({
      requestsPerMinute: 500,
      upgrade: { atTotalPaidNano: 100_000_000_000n, priceNano: 19_990_000_000n, periodDays: 7 },
    });
    expect(tiers['gold']).toEqual({ requestsPerMinute: 900, upgrade: { priceNano: 5_000_000_000n, periodDays: 30 } });
    expect(tiersSchema.safeParse({ team: { requestsPerMinute: 5, priceUsd: '0' } }).success).toBe(false);
    expect(tiersSchema.safeParse({ team: { requestsPerMinute: 5, priceUsd: '1.234' } }).success).toBe(false);
  });

  it('merges configured tiers over the defaults', () => {
    const tiers = tiersSchema.parse({
      pro: { requestsPerMinute: 2_000, tokensPerMinute: 400_000 },
      team: { requestsPerMinute: 500 },
    });
    expect(tiers['pro']).toEqual({ requestsPerMinute: 2_000, tokensPerMinute: 400_000 });
    expect(tiers['team']).toEqual({ requestsPerMinute: 500 });
    expect(tiers['standard']).toEqual({ requestsPerMinute: 100 });
  });

  it.each([
    { pro: { requestsPerMinute: 0 } },
    { pro: { requestsPerMinute: 1.5 } },
    { pro: { requestsPerMinute: 10, tokensPerMinute: -1 } },
    { pro: { requestsPerMinute: 10, burst: 3 } },
    { pro: {} },
  ])('rejects %j', (input) => {
    expect(tiersSchema.safeParse(input).success).toBe(false);
  });
});

describe('resolveTier', () => {
  it('finds a known tier', () => {
    expect(resolveTier('enterprise')).toEqual({ name: 'enterprise', requestsPerMinute: 10_000 });
  });

  it.each([undefined, null, 'platinum', 'toString', '__proto__'])('falls back to standard for %s', (name) => {
    expect(resolveTier(name, DEFAULT_TIERS)).toEqual({ name: 'standard', requestsPerMinute: 100 });
  });

  it('uses the configured standard tier', () => {
    const tiers = tiersSchema.parse({ standard: { requestsPerMinute: 60, tokensPerMinute: 10_000 } });
    expect(resolveTier('nope', tiers)).toEqual({ name: 'standard', requestsPerMinute: 60, tokensPerMinute: 10_000 });
  });
});
