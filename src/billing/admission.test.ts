import { describe, expect, it } from 'vitest';
import { planAdmission } from './admission.js';
import { pricesFromPerMillion } from './prices.js';
import { priceSettlement } from '../../test/helpers/settlement-pricers.js';

// beta-5.4: $2.50 in (2,500 nano/token), $15 out (15,000 nano/token).
const PRICES = pricesFromPerMillion({ input: '2.50', output: '15', cacheRead: '0.25' });
const request = (clientMax?: number, firstSlice = 2_048) => ({
  inputTokens: 100,
  clientMaxOutputTokens: clientMax,
  modelMaxOutputTokens: 128_000,
  firstSliceTokens: firstSlice,
  prices: PRICES,
});

describe('planAdmission', () => {
  it('holds the searches the money left after the prompt and first slice pays for, refusing only a forced one', () => {
    const tokens = 100n * 2_500n + 200n * 15_000n;
    const searches = (required = false) => ({
      ...request(200),
      webSearches: { wanted: 5, priceNano: 10_000_000n, required },
    });
    // Every search paid for: held with the tokens.
    expect(planAdmission(searches(), { availableNano: tokens + 50_000_000n, freeTokensLeft: 0 })).toMatchObject({
      admitted: true,
      holdNano: tokens + 50_000_000n,
      webSearches: 5,
    });
    // Two of five: the request runs with two.
    expect(planAdmission(searches(), { availableNano: tokens + 29_999_999n, freeTokensLeft: 0 })).toMatchObject({
      holdNano: tokens + 20_000_000n,
      webSearches: 2,
    });
    // Free tokens pay no search: the request runs without one, holding nothing.
    expect(planAdmission(searches(), { availableNano: 0n, freeTokensLeft: 1_000 })).toMatchObject({
      admitted: true,
      holdNano: 0n,
      webSearches: 0,
    });
    // A forced search the account cannot pay: refused, the search named in the reason.
    const forced = planAdmission(searches(true), { availableNano: 0n, freeTokensLeft: 1_000 });
    expect(forced.admitted).toBe(false);
    expect(!forced.admitted && forced.reason).toMatch(/needs \$0\.01 to start .*the web search it asks for/);
  });

  it('holds every input token and a first slice of output at list price, not the whole limit', () => {
    expect(planAdmission(request(32_000, 500), { availableNano: 10_000_000n, freeTokensLeft: 0 })).toMatchObject({
      admitted: true,
      holdNano: 100n * 2_500n + 500n * 15_000n,
      freeTokens: 0,
      maxOutputTokens: 500,
    });
    // A client limit below the slice is the whole output.
    expect(planAdmission(request(200), { availableNano: 10_000_000n, freeTokensLeft: 0 })).toMatchObject({
      holdNano: 100n * 2_500n + 200n * 15_000n,
      maxOutputTokens: 200,
    });
  });

  it('spends free tokens first, input before output; a request may be partly free, partly paid', () => {
    expect(planAdmission(request(200), { availableNano: 10_000_000n, freeTokensLeft: 150 })).toMatchObject({
      admitted: true,
      holdNano: 150n * 15_000n,
      freeTokens: 150,
      maxOutputTokens: 200,
    });
    expect(planAdmission(request(200), { availableNano: 0n, freeTokensLeft: 300 })).toMatchObject({
      admitted: true,
      holdNano: 0n,
      freeTokens: 300,
    });
  });

  it('starts with the part of the first slice the account can afford, whatever the client limit', () => {
    // 10 free tokens cover input; 90 paid input tokens leave 625,007 nano: 41 output tokens at 15,000.
    for (const clientMax of [undefined, 1_000, 32_000]) {
      expect(
        planAdmission(request(clientMax), { availableNano: 100n * 2_500n + 40n * 15_000n + 7n, freeTokensLeft: 10 }),
      ).toMatchObject({
        admitted: true,
        holdNano: 90n * 2_500n + 41n * 15_000n,
        freeTokens: 10,
        maxOutputTokens: 41,
      });
    }
  });

  it('refuses when not even the prompt and one output token are covered, saying what it needed to start', () => {
    const plan = planAdmission(request(), { availableNano: 1_000n, freeTokensLeft: 0 });
    expect(plan.admitted).toBe(false);
    expect(!plan.admitted && plan.reason).toMatch(
      /needs \$0\.00025 to start \(its prompt alone \(about 100 input tokens\)\), but the account has \$0\.000001 available/,
    );
    const noOutput = planAdmission(request(), { availableNano: 100n * 2_500n, freeTokensLeft: 0 });
    expect(noOutput.admitted).toBe(false);
    // Input 250,000 + 2,048 × 15,000 = 30,970,000 nano.
    expect(!noOutput.admitted && noOutput.reason).toMatch(
      /needs \$0\.03097 to start \(its prompt \(about 100 input tokens\) and a first slice of 2048 output tokens\)/,
    );
  });
});

describe('priceSettlement', () => {
  const usage = {
    inputTokens: 60,
    cacheReadTokens: 40,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 30,
    reasoningTokens: 5,
  };

  it('charges tokens × price exactly, cache reads at their own rate', () => {
    expect(priceSettlement(usage, PRICES, 0)).toEqual({
      chargeNano: 60n * 2_500n + 40n * 250n + 30n * 15_000n,
      freeTokensUsed: 0,
    });
  });

  it('applies the free tokens the hold kept, input first, and never more than were used', () => {
    expect(priceSettlement(usage, PRICES, 70)).toEqual({ chargeNano: 30n * 250n + 30n * 15_000n, freeTokensUsed: 70 });
    expect(priceSettlement(usage, PRICES, 1_000)).toEqual({ chargeNano: 0n, freeTokensUsed: 130 });
  });
});
