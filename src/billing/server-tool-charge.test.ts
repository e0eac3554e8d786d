import { describe, expect, it } from 'vitest';
import { pricesFromPerMillion } from './prices.js';
import { serverToolCharge, serverToolFields, serverToolHold } from './server-tool-charge.js';
import { priceSettlement } from './settlement-pricing.js';
import { emptyUsage } from '../canonical/usage.js';

const ALPHA = pricesFromPerMillion({
  input: '3',
  output: '15',
  webSearchRequestNano: '10000000',
  webFetchRequestNano: '0',
});

describe('server-tool charges', () => {
  it('prices each web search at the model’s price per search; fetches and unpriced models cost nothing', () => {
    expect(serverToolCharge({ webSearchRequests: 3, webFetchRequests: 2 }, ALPHA)).toBe(30_000_000n);
    expect(serverToolCharge({}, ALPHA)).toBe(0n);
    expect(serverToolCharge({ webSearchRequests: 3 }, pricesFromPerMillion({ input: '1', output: '1' }))).toBe(0n);
  });

  it('is added to the token charge at settlement, never covered by free tokens', () => {
    const usage = { ...emptyUsage(), inputTokens: 100, outputTokens: 10, webSearchRequests: 1 };
    // All 110 tokens free: only the search is charged.
    expect(priceSettlement(usage, ALPHA, 110)).toEqual({ chargeNano: 10_000_000n, freeTokensUsed: 110 });
    expect(priceSettlement(usage, ALPHA, 0).chargeNano).toBe(100n * 3_000n + 10n * 15_000n + 10_000_000n);
  });

  it('holds every search a request may make, and records counts and cost only when tools were used', () => {
    expect(serverToolHold(5, ALPHA)).toBe(50_000_000n);
    expect(serverToolFields(emptyUsage(), ALPHA)).toEqual({});
    expect(
      serverToolFields({ ...emptyUsage(), serverToolUse: { webSearchRequests: 2, webFetchRequests: 0 } }, ALPHA),
    ).toEqual({ webSearchRequests: 2, webFetchRequests: 0, serverToolNano: 20_000_000n });
  });
});
