import { describe, expect, it } from 'vitest';
import { pricesFromPerMillion } from './prices.js';
import { serverToolCharge, serverToolFees, serverToolFields, webSearchesHeld } from './server-tool-charge.js';
import { splitUsage } from './usage-split.js';
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

  it('is a fee after the tokens at settlement: never covered by free tokens, unbilled past the balance', () => {
    const usage = { ...emptyUsage(), inputTokens: 100, outputTokens: 10 };
    const fees = serverToolFees({ serverToolNano: 10_000_000n });
    const rich = { moneyNano: [2n ** 62n] };
    // All 110 tokens free: only the search is charged.
    expect(splitUsage(usage, ALPHA, { ...rich, freeTokens: 110 }, fees).billedNano).toBe(10_000_000n);
    expect(splitUsage(usage, ALPHA, { ...rich, freeTokens: 0 }, fees).billedNano).toBe(
      100n * 3_000n + 10n * 15_000n + 10_000_000n,
    );
    const poor = splitUsage(usage, ALPHA, { freeTokens: 0, moneyNano: [1_000_000n] }, fees);
    expect(poor.billedNano).toBe(1_000_000n);
    expect(poor.unbilledNano).toBe(100n * 3_000n + 10n * 15_000n + 10_000_000n - 1_000_000n);
    expect(serverToolFees({})).toEqual([]);
  });

  it('holds every search a request may make, and records counts and cost only when tools were used', () => {
    const search = { kind: 'web-search' as const, label: 'web_search', param: 'tools[0]', webSearch: { maxUses: 3 } };
    expect(webSearchesHeld([search, { ...search, webSearch: {} }], {})).toBe(8);
    // A search model's call (beta) is billed as one search, whatever the limit.
    expect(webSearchesHeld([search], { webSearchBilledPerRequest: true })).toBe(1);
    expect(webSearchesHeld(undefined, { webSearchBilledPerRequest: true })).toBe(0);
    expect(serverToolFields(emptyUsage(), ALPHA)).toEqual({});
    expect(
      serverToolFields({ ...emptyUsage(), serverToolUse: { webSearchRequests: 2, webFetchRequests: 0 } }, ALPHA),
    ).toEqual({ webSearchRequests: 2, webFetchRequests: 0, serverToolNano: 20_000_000n });
  });
});
