/**
 * Settlements the store refuses go to the journal and are billed on replay exactly as they would have been.
 * The store really refuses: the SQLite file and its WAL are made immutable (see test/helpers/immutable-files.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeImmutable, makeWritable } from '../../test/helpers/immutable-files.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { openStorage } from '../storage/open-storage.js';
import type { Reservation } from '../storage/billing-types.js';
import type { Storage } from '../storage/types.js';
import { GatewayError } from '../canonical/errors.js';
import { BillingService } from './billing-service.js';
import { parseUsd } from './money.js';
import { SettlementJournal } from './settlement-journal.js';
import { priceSettlement } from '../../test/helpers/settlement-pricers.js';
import { fundedKeyIn } from '../../test/helpers/storage-backends.js';

/** Less than the test's usage: the replayed request is partly free, partly charged. */
const FREE_TOKENS_PER_DAY = 500;

let directory: string;
let database: string;
let storage: Storage;
let auth: AuthenticatedKey;
let frozen: string[] = [];
const journals: SettlementJournal[] = [];
const model = new ModelCatalog().resolve('beta-5.4');
const usage = {
  inputTokens: 400,
  cacheReadTokens: 30,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens: 250,
  reasoningTokens: 0,
};
const request: CanonicalRequest = {
  model: 'beta-5.4',
  system: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
  sampling: {},
  stream: true,
  extensions: {},
  extensionsProtocol: 'openai-chat',
  maxOutputTokens: 300,
};

function billingWithJournal(at = join(directory, 'settlement-journal')): {
  billing: BillingService;
  journal: SettlementJournal;
} {
  const journal = new SettlementJournal({ directory: at, retryMs: 20 });
  journals.push(journal);
  // A free allowance that covers part of each reply: the replay must price with the hold's own free tokens.
  return {
    billing: new BillingService(
      storage.billing,
      { freeTokensPerDay: FREE_TOKENS_PER_DAY, reservationTtlMs: 60_000 },
      Date.now,
      journal,
    ),
    journal,
  };
}

const settlement = (requestId: string, reservation: Reservation) => ({
  requestId,
  auth,
  model,
  usage,
  status: 'ok',
  stream: true,
  startedAt: Date.now() - 1_234,
  rawUsage: { total: 680 },
  reservation,
});

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-journal-billing-'));
  database = join(directory, 'db.sqlite');
  storage = await openStorage(`sqlite:${database}`);
  await storage.migrate();
  auth = await fundedKeyIn(storage, 'acct_j', parseUsd('1'));
});

afterAll(async () => {
  await makeWritable(frozen).catch(() => undefined);
  await Promise.all(journals.map((journal) => journal.close()));
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('BillingService with a settlement journal', () => {
  it('journals what an unwritable store refuses, and replays it billed as it would have been, hold released, once', async () => {
    const { billing, journal } = billingWithJournal();
    const held = await billing.admit('req_journaled', auth, model, request);
    expect(held.freeTokens).toBeGreaterThan(0);
    const before = await storage.billing.balance('acct_j');

    frozen = [database, `${database}-wal`];
    await makeImmutable(frozen);
    const outcome = await billing.settle(settlement('req_journaled', held));
    expect(outcome).toEqual({ settled: false, reason: 'journaled' });
    expect(journal.pendingEntries().map((entry) => entry.usage.requestId)).toEqual(['req_journaled']);
    // Still down: a pass stops at the first entry and keeps it.
    expect(await billing.replayJournal()).toMatchObject({ settled: 0, storeUnavailable: true, remaining: 1 });

    await makeWritable(frozen);
    frozen = [];
    expect(await billing.replayJournal()).toMatchObject({
      settled: 1,
      alreadySettled: 0,
      failed: [],
      storeUnavailable: false,
      remaining: 0,
    });

    // Free first up to what is left of the day's allowance (all of it: nothing else ran today), not only the hold's.
    const expected = priceSettlement(usage, model.prices, FREE_TOKENS_PER_DAY);
    expect(expected.chargeNano).toBeGreaterThan(0n);
    const [record] = await storage.usage.listByAccount('acct_j', 1);
    expect(record).toMatchObject({
      requestId: 'req_journaled',
      costNano: expected.chargeNano,
      freeTokens: expected.freeTokensUsed,
      inputTokens: 400,
      outputTokens: 250,
      status: 'ok',
      stream: true,
    });
    expect(record!.latencyMs).toBeGreaterThanOrEqual(1_234);
    expect(record!.latencyMs).toBeLessThan(60_000);
    expect(await storage.billing.balance('acct_j')).toMatchObject({
      balanceNano: before!.balanceNano - expected.chargeNano,
      reservedNano: 0n,
      freeReservedTokens: 0,
      freeUsedTokens: before!.freeUsedTokens + expected.freeTokensUsed,
    });
    const [ledger] = await storage.billing.ledger('acct_j', 1);
    expect(ledger).toMatchObject({
      kind: 'usage',
      requestId: 'req_journaled',
      amountNano: -expected.chargeNano,
      idempotencyKey: 'usage:req_journaled',
      createdAt: record!.createdAt + record!.latencyMs,
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('a settlement replayed twice (two instances holding the same entry) is billed once', async () => {
    const first = billingWithJournal();
    const second = billingWithJournal();
    const held = await first.billing.admit('req_twice', auth, model, request);
    frozen = [database, `${database}-wal`];
    await makeImmutable(frozen);
    const journaled = await first.billing.settle(settlement('req_twice', held));
    expect(journaled).toMatchObject({ reason: 'journaled' });
    // The same entry in the other instance's journal, as after an adoption of a journal whose owner was frozen.
    await second.journal.append(first.journal.pendingEntries()[0]!);
    await makeWritable(frozen);
    frozen = [];
    const balance = await storage.billing.balance('acct_j');
    const reports = [await second.billing.replayJournal(), await first.billing.replayJournal()];
    expect(reports.map(({ settled, alreadySettled }) => ({ settled, alreadySettled }))).toEqual([
      { settled: 1, alreadySettled: 0 },
      { settled: 0, alreadySettled: 1 },
    ]);
    const cost = priceSettlement(usage, model.prices, held.freeTokens).chargeNano;
    expect((await storage.billing.balance('acct_j'))?.balanceNano).toBe(balance!.balanceNano - cost);
    expect(await storage.usage.recordedRequestIds(['req_twice', 'req_missing'])).toEqual(new Set(['req_twice']));
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('with neither the store nor the journal writable: the settlement waits in memory, every new admission is refused 503, and it is billed once the store is back', async () => {
    // The journal's directory under a file: mkdir fails (ENOTDIR), for root too.
    const blocker = join(directory, 'blocker');
    writeFileSync(blocker, 'not a directory');
    const { billing, journal } = billingWithJournal(join(blocker, 'settlement-journal'));
    const held = await billing.admit('req_unwritten', auth, model, request);
    const before = await storage.billing.balance('acct_j');

    frozen = [database, `${database}-wal`];
    await makeImmutable(frozen);
    expect(await billing.settle(settlement('req_unwritten', held))).toEqual({
      settled: false,
      reason: 'journal_unavailable',
    });
    expect(journal.stats()).toMatchObject({ journaled: 0, unwritten: 1, unavailable: true });

    await makeWritable(frozen);
    frozen = [];
    // The store works again, the journal does not: still refused (a free request too: it settles as well), nothing held.
    const refusal = await billing.admit('req_refused', auth, model, request).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(GatewayError);
    expect(refusal).toMatchObject({
      code: 'settlement_journal_unavailable',
      status: 503,
      retryAfterSeconds: 10,
      message: expect.stringContaining('(ENOTDIR); paid requests are refused until it can'),
    });
    expect((refusal as Error).message).not.toContain(blocker);
    expect((await storage.billing.balance('acct_j'))?.reservedNano).toBe(before!.reservedNano);

    // Replay takes the unwritten settlement to the store: billed as it would have been.
    expect(await billing.replayJournal()).toMatchObject({ settled: 1, remaining: 0 });
    expect(await storage.usage.recordedRequestIds(['req_unwritten'])).toEqual(new Set(['req_unwritten']));
    const cost = priceSettlement(usage, model.prices, held.freeTokens).chargeNano;
    expect(await storage.billing.balance('acct_j')).toMatchObject({
      balanceNano: before!.balanceNano - cost,
      reservedNano: 0n,
    });

    rmSync(blocker);
    await expect.poll(() => journal.unavailable(), { timeout: 2_000, interval: 20 }).toBeUndefined();
    await billing.settle(settlement('req_admitted', await billing.admit('req_admitted', auth, model, request)));
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });
});
