import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../storage/billing-types.js';
import { presentLedgerEntry } from './presenters.js';

const usageLine: LedgerEntry = {
  id: 'led_1',
  accountId: 'acc_1',
  kind: 'usage',
  amountNano: -26_000_000n,
  idempotencyKey: 'usage:req_1',
  requestId: 'req_1',
  note: null,
  createdAt: 0,
  balanceAfterNano: 4_974_000_000n,
  unbilledTokens: 0,
  unbilledNano: 0n,
  webSearchRequests: 2,
  webFetchRequests: 0,
  serverToolNano: 20_000_000n,
};
const detail = {
  requestId: 'req_1',
  model: 'alpha-sonnet-5',
  inputTokens: 1_000,
  outputTokens: 200,
  cachedTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  keyName: 'ci',
};

describe('presentLedgerEntry (dashboard)', () => {
  it('names a usage line’s web searches and their cost in its description', () => {
    const shown = presentLedgerEntry(usageLine, detail);
    expect(shown.description).toBe('alpha-sonnet-5 · 1,000 in / 200 out, 2 web searches ($0.02) · key ci');
    expect(shown).toMatchObject({ webSearchRequests: 2, serverToolUsd: '0.02', amountUsd: '-0.026' });
    const one = presentLedgerEntry({ ...usageLine, webSearchRequests: 1, serverToolNano: 10_000_000n }, detail);
    expect(one.description).toContain(', 1 web search ($0.01)');
    expect(presentLedgerEntry({ ...usageLine, webSearchRequests: 0 }, detail).description).not.toContain('search');
  });
});
