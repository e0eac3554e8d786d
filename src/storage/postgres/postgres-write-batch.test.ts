/**
 * The batched hot path on the real PostgreSQL: holds and settlements issued in one event-loop turn go as
 * one transaction, and every money rule still holds when a batch mixes accounts, when a hot account's batch only
 * partly fits, and when the batch fails and its writes run again one by one.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresSchema, POSTGRES_URL } from '../../../test/helpers/storage-backends.js';
import { openStorage } from '../open-storage.js';
import type { BillingRepository, ReserveInput, ReserveResult } from '../billing-types.js';
import { billingStoreOf } from '../kysely-storage.js';
import type { Storage } from '../types.js';
import { PostgresBillingStore } from './postgres-billing-store.js';
import {
  DAY,
  fundedAccountIn,
  holdUpTo,
  plainUsage,
  reserveInput as reserveInputFor,
  uniqueId,
} from '../../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';

describe('PostgreSQL batched holds and settlements', () => {
  const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
  let storage: Storage;
  /** The storage's own store: its one-statement path, batched or alone, and its locked path, counted per call. */
  let hot: PostgresBillingStore;
  let billing: BillingRepository;

  beforeAll(async () => {
    storage = await openStorage(POSTGRES_URL, { postgresSchema: schema });
    await storage.migrate();
    const store = billingStoreOf(storage);
    if (!(store instanceof PostgresBillingStore)) throw new Error('not the PostgreSQL billing store');
    hot = store;
    billing = storage.billing;
  });

  afterAll(async () => {
    await storage?.close();
    await dropPostgresSchema(schema);
  });

  async function fundedAccount(nano: bigint) {
    return { ...(await fundedAccountIn(storage, nano)), credited: nano };
  }

  /** With the account's money as the key lookup read it, like a request: the plan is made from that, before the batch. */
  function reserveInput(
    ids: { accountId: string; keyId: string; credited: bigint },
    want: bigint,
    requestId = uniqueId('req'),
  ): ReserveInput {
    return reserveInputFor(ids, holdUpTo(want), {
      requestId,
      accountHint: { balance: ids.credited, reserved: 0n, freeDay: DAY, freeUsed: 0, freeReserved: 0 },
    });
  }

  const settle = (requestId: string, ids: { accountId: string; keyId: string }, chargeNano: bigint) =>
    billing.settle({
      freeAllowanceTokens: 0,
      usage: plainUsage(requestId, ids),
      price: costing(chargeNano),
      heldFreeTokens: 0,
    });

  const requestIdOf = (result: ReserveResult): string => {
    if (!result.admitted) throw new Error('not admitted');
    return result.reservation.requestId;
  };

  function snapshot() {
    return { ...hot.writes.stats, reserve: hot.paths.locked.reserve, settle: hot.paths.locked.settle };
  }

  it('one batch holds and settles for several accounts at once, each account billed its own', async () => {
    const accounts = await Promise.all([fundedAccount(100_000n), fundedAccount(50_000n), fundedAccount(10_000n)]);
    const before = snapshot();
    // Issued in one turn: one batch of 12 holds over three accounts.
    const held = await Promise.all(
      accounts.flatMap((ids) => Array.from({ length: 4 }, () => billing.reserve(reserveInput(ids, 2_000n)))),
    );
    expect(held.every((result) => result.admitted)).toBe(true);
    const afterHolds = snapshot();
    expect(afterHolds.writes - before.writes).toBe(12);
    expect(afterHolds.batches - before.batches).toBe(1);
    for (const ids of accounts)
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: ids.credited,
        reservedNano: 8_000n,
      });
    const settled = await Promise.all(
      held.map((result, index) => settle(requestIdOf(result), accounts[Math.floor(index / 4)]!, 1_500n)),
    );
    expect(settled.every((result) => result.settled && result.chargedNano === 1_500n)).toBe(true);
    const after = snapshot();
    expect(after.batches - afterHolds.batches).toBe(1);
    expect([after.reserve - before.reserve, after.settle - before.settle, after.fallbacks - before.fallbacks]).toEqual([
      0, 0, 0,
    ]);
    for (const ids of accounts)
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: ids.credited - 6_000n,
        reservedNano: 0n,
      });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it("a hot account's batch takes the holds that fit in order; the rest are decided by the locked path", async () => {
    const ids = await fundedAccount(10_000n);
    const before = snapshot();
    // Every plan was made from the same hint (10,000 available): the batch must re-check each against what the
    // holds before it in the batch left.
    const results = await Promise.all(Array.from({ length: 8 }, () => billing.reserve(reserveInput(ids, 3_000n))));
    expect(results.filter((result) => result.admitted)).toHaveLength(3);
    const after = snapshot();
    expect(after.writes - before.writes).toBe(8);
    expect(after.reserve - before.reserve).toBe(5);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 10_000n, reservedNano: 9_000n });
    // Settled in one batch, charges above the holds: capped at the balance, never below zero.
    const settled = await Promise.all(
      results.filter((result) => result.admitted).map((result) => settle(requestIdOf(result), ids, 4_000n)),
    );
    expect(settled.map((result) => (result.settled ? result.chargedNano : -1n)).sort()).toEqual([
      2_000n,
      4_000n,
      4_000n,
    ]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 0n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('a batch whose statement fails is rolled back whole, and each write then runs alone with its own outcome', async () => {
    const ids = await fundedAccount(100_000n);
    const taken = await billing.reserve(reserveInput(ids, 1_000n));
    const duplicate = requestIdOf(taken);
    const before = snapshot();
    // The second write repeats a request id that already holds: its insert fails, and with it the batch.
    const outcomes = await Promise.allSettled([
      billing.reserve(reserveInput(ids, 1_000n)),
      billing.reserve(reserveInput(ids, 1_000n, duplicate)),
      billing.reserve(reserveInput(ids, 1_000n)),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(snapshot().fallbacks - before.fallbacks).toBe(1);
    // Three holds, not four (the failed batch wrote nothing, the duplicate never held twice).
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 3_000n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('settlements of a failed batch run again once each; a request settled twice is charged once', async () => {
    const ids = await fundedAccount(100_000n);
    const [first, second, third] = await Promise.all([1, 2, 3].map(() => billing.reserve(reserveInput(ids, 2_000n))));
    const before = snapshot();
    const outcomes = await Promise.allSettled([
      settle(requestIdOf(first!), ids, 1_000n),
      // Fails the batch (a duplicate hold) after the first settlement ran inside it: that work is rolled back too.
      billing.reserve(reserveInput(ids, 1_000n, requestIdOf(third!))),
      settle(requestIdOf(second!), ids, 1_000n),
      // The same request twice in one batch: the second finds it settled.
      settle(requestIdOf(second!), ids, 1_000n),
    ]);
    expect(snapshot().fallbacks - before.fallbacks).toBe(1);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const values = outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : undefined));
    expect(values[0]).toMatchObject({ settled: true, chargedNano: 1_000n });
    expect([values[2], values[3]]).toContainEqual({ settled: false, reason: 'already_settled' });
    expect([values[2], values[3]]).toContainEqual(expect.objectContaining({ settled: true, chargedNano: 1_000n }));
    // And again, later, in a batch that succeeds.
    expect(
      await Promise.all([settle(requestIdOf(first!), ids, 1_000n), settle(requestIdOf(third!), ids, 1_000n)]),
    ).toEqual([
      { settled: false, reason: 'already_settled' },
      { settled: true, chargedNano: 1_000n, unbilledNano: 0n, unbilledTokens: 0, freeTokensUsed: 0 },
    ]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 97_000n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });
});
