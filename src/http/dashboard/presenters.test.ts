import { describe, expect, it } from 'vitest';
import { smallestAdmissionHold } from '../../billing/billing-service.js';
import { pricesFromPerMillion } from '../../billing/prices.js';
import type { LedgerEntry } from '../../storage/billing-types.js';
import { FULL_PERMISSIONS } from '../../storage/key-permission-types.js';
import type { ApiKeyRecord } from '../../storage/types.js';
import { presentKey, presentLedgerEntry } from './presenters.js';

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

describe('presentKey (dashboard)', () => {
  const key: ApiKeyRecord = {
    id: 'key_1',
    accountId: 'acc_1',
    createdBy: null,
    projectId: 'proj_default_acc_1',
    name: 'ci',
    keyHash: 'h',
    hint: 'sk-tg-…abcd',
    createdAt: 0,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    permissions: { ...FULL_PERMISSIONS, spendLimit: { limitNano: 1_000n, period: 'total' } },
    spend: { periodStart: 0, usedNano: 600n, reservedNano: 100n },
    limits: [{ limitNano: 1_000n, period: 'total', periodStart: 0, usedNano: 600n, reservedNano: 100n }],
  };

  it('says the limit is reached once what is left cannot pay the smallest admission hold', () => {
    // 1,000 − 600 spent − 100 held leaves 300.
    expect(presentKey(key, 0, 300n).spendLimit?.limitReached).toBe(false);
    expect(presentKey(key, 0, 301n).spendLimit?.limitReached).toBe(true);
    expect(presentKey({ ...key, permissions: FULL_PERMISSIONS }, 0, 301n).spendLimit).toBeNull();
  });

  it('tells the playground key from the others', () => {
    expect(presentKey(key, 0).kind).toBe('standard');
    expect(presentKey({ ...key, id: 'key_playground_acc_1' }, 0).kind).toBe('playground');
  });
});

describe('smallestAdmissionHold', () => {
  it('holds a one-token prompt with the margin and floor at the worst input price, and one output token', () => {
    const prices = pricesFromPerMillion({ input: '3', output: '15', cacheRead: '0.3', cacheWrite: '3.75' });
    // ceil(1 × 1.15) + 16 = 18 prompt tokens at the cache-write price (3,750 nano), and 15,000 nano of output.
    expect(smallestAdmissionHold(prices)).toBe(18n * 3_750n + 15_000n);
  });
});
