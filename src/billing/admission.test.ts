import { describe, expect, it } from 'vitest';
import { planAdmission } from './admission.js';
import { pricesFromPerMillion } from './prices.js';
import { priceSettlement } from './settlement-pricing.js';

// beta-5.4: $2.50 in (2,500 nano/token), $15 out (15,000 nano/token).
const PRICES = pricesFromPerMillion({ input: '2.50', output: '15', cacheRead: '0.25' });
const request = (clientMax?: number) => ({ inputTokens: 100, clientMaxOutputTokens: clientMax, modelMaxOutputTokens: 128_000, prices: PRICES });

describe('planAdmission', () => {
  it('holds the worst case: every input token and every possible output token at list price', () => {
    expect(planAdmission(request(200), { availableNano: 10_000_000n, freeTokensLeft: 0 })).toEqual({
      admitted: true,
      holdNano: 100n * 2_500n + 200n * 15_000n,
      freeTokens: 0,
      maxOutputTokens: 200,
    });
  });

  it('spends free tokens first, input before output; a request may be partly free, partly paid', () => {
    expect(planAdmission(request(200), { availableNano: 10_000_000n, freeTokensLeft: 150 })).toEqual({
      admitted: true,
      holdNano: 150n * 15_000n,
      freeTokens: 150,
      maxOutputTokens: 200,
    });
    expect(planAdmission(request(200), { availableNano: 0n, freeTokensLeft: 300 })).toMatchObject({ admitted: true, holdNano: 0n, freeTokens: 300 });
  });

  it("refuses the client's own limit when the balance cannot cover it, saying how many output tokens it can", () => {
    const plan = planAdmission(request(1_000), { availableNano: 100n * 2_500n + 40n * 15_000n, freeTokensLeft: 0 });
    expect(plan.admitted).toBe(false);
    expect(!plan.admitted && plan.reason).toMatch(/covers at most 40 output tokens/);
    expect(!plan.admitted && plan.reason).toMatch(/Lower max_tokens to 40/);
  });

  it('with no client limit, caps the output at what the account can afford instead of refusing', () => {
    // 10 free tokens cover input; 90 paid input tokens leave 625,007 nano: 41 output tokens at 15,000.
    expect(planAdmission(request(), { availableNano: 100n * 2_500n + 40n * 15_000n + 7n, freeTokensLeft: 10 })).toEqual({
      admitted: true,
      holdNano: 90n * 2_500n + 41n * 15_000n,
      freeTokens: 10,
      maxOutputTokens: 41,
    });
  });

  it('refuses when not even the prompt and one output token are covered', () => {
    const plan = planAdmission(request(), { availableNano: 1_000n, freeTokensLeft: 0 });
    expect(plan.admitted).toBe(false);
    expect(!plan.admitted && plan.reason).toMatch(/Insufficient balance: the prompt alone/);
    expect(planAdmission(request(), { availableNano: 100n * 2_500n, freeTokensLeft: 0 }).admitted).toBe(false);
  });
});

describe('priceSettlement', () => {
  const usage = { inputTokens: 60, cacheReadTokens: 40, cacheWriteTokens: 0, outputTokens: 30, reasoningTokens: 5 };

  it('charges tokens × price exactly, cache reads at their own rate', () => {
    expect(priceSettlement(usage, PRICES, 0)).toEqual({ chargeNano: 60n * 2_500n + 40n * 250n + 30n * 15_000n, freeTokensUsed: 0 });
  });

  it('applies the free tokens the hold kept, input first, and never more than were used', () => {
    expect(priceSettlement(usage, PRICES, 70)).toEqual({ chargeNano: 30n * 250n + 30n * 15_000n, freeTokensUsed: 70 });
    expect(priceSettlement(usage, PRICES, 1_000)).toEqual({ chargeNano: 0n, freeTokensUsed: 130 });
  });
});
