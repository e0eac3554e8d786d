import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { pricesFromPerMillion } from './prices.js';
import { decodeJournal, encodeJournalLine, type JournalEntry } from './settlement-journal-entry.js';
import { priceSettlement } from '../../test/helpers/settlement-pricers.js';
import { serverToolFees } from './server-tool-charge.js';
import { splitUsage } from './usage-split.js';

const SONNET = pricesFromPerMillion({
  input: '3',
  output: '15',
  cacheRead: '0.30',
  cacheWrite: '3.75',
  cacheWrite1h: '6',
});

const usage = {
  requestId: 'req_1',
  accountId: 'acct_1',
  apiKeyId: 'key_1',
  model: 'alpha-sonnet-5',
  family: 'alpha',
  inputTokens: 500,
  cacheReadTokens: 10_000,
  cacheWriteTokens: 3_000,
  outputTokens: 300,
  reasoningTokens: 0,
  status: 'ok',
  stream: false,
  latencyMs: 12,
  createdAt: 1_700_000_000_000,
  rawUsage: null,
};

/** A line as the journal wrote it before 1-hour writes were counted: no count, no 1-hour price. */
function lineWithout1h(): string {
  const json = JSON.stringify({
    v: 1,
    usage,
    prices: { input: '3000', output: '15000', cacheRead: '300', cacheWrite: '3750' },
    journaledAt: 1_700_000_000_100,
  });
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`;
}

describe('journal entries and 1-hour cache writes', () => {
  it('keeps the 1-hour count and price across a round trip, so a replay bills what settlement would have', () => {
    const entry: JournalEntry = {
      usage: { ...usage, cacheWrite1hTokens: 1_000, costNano: 0n, freeTokens: 0, unbilledNano: 0n },
      prices: SONNET,
      journaledAt: 1_700_000_000_100,
    };
    const { entries, unreadableLines } = decodeJournal(encodeJournalLine(entry));
    expect(unreadableLines).toBe(0);
    expect(entries[0]?.usage.cacheWrite1hTokens).toBe(1_000);
    expect(entries[0]?.prices.cacheWrite1h).toBe(6_000n);
    // 10,000 × 300 + 2,000 × 3,750 + 1,000 × 6,000 + 500 × 3,000 + 300 × 15,000.
    expect(priceSettlement(entries[0]!.usage, entries[0]!.prices, 0).chargeNano).toBe(22_500_000n);
  });

  it('replays an entry written before the split: no 1-hour writes, every write at the 5-minute price', () => {
    const { entries, unreadableLines } = decodeJournal(lineWithout1h());
    expect(unreadableLines).toBe(0);
    const [entry] = entries;
    expect(entry?.usage.cacheWrite1hTokens).toBe(0);
    expect(entry?.prices.cacheWrite1h).toBe(3_750n);
    // 10,000 × 300 + 3,000 × 3,750 + 500 × 3,000 + 300 × 15,000.
    expect(priceSettlement(entry!.usage, entry!.prices, 0).chargeNano).toBe(20_250_000n);
  });
});

describe('journal entries and web searches', () => {
  it('keeps the search count and its cost across a round trip, so a replay charges it', () => {
    const prices = { ...SONNET, webSearchRequest: 10_000_000n, webFetchRequest: 0n };
    const entry: JournalEntry = {
      usage: {
        ...usage,
        cacheWrite1hTokens: 0,
        webSearchRequests: 2,
        webFetchRequests: 1,
        serverToolNano: 20_000_000n,
        costNano: 0n,
        freeTokens: 0,
        unbilledNano: 0n,
      },
      prices,
      journaledAt: 1_700_000_000_100,
    };
    const [decoded] = decodeJournal(encodeJournalLine(entry)).entries;
    expect(decoded?.usage).toMatchObject({ webSearchRequests: 2, webFetchRequests: 1, serverToolNano: 20_000_000n });
    // The tokens as above (20,250,000), then the searches' recorded cost as a fee.
    const split = splitUsage(
      decoded!.usage,
      decoded!.prices,
      { freeTokens: 0, moneyNano: [2n ** 62n] },
      serverToolFees(decoded!.usage),
    );
    expect(split.billedNano).toBe(40_250_000n);
  });
});
