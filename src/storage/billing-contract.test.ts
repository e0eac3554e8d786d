/**
 * The billing half of the storage contract, run against SQLite and the real PostgreSQL: money moves only with
 * a ledger entry, holds are atomic under concurrency, settlement happens once, nothing goes below zero. Key limits,
 * growing holds and the sweeper, and the rollup have files of their own (billing-*-contract.test.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { billingContractFixture, DAY, NOW, uniqueId } from '../../test/helpers/billing-contract-fixture.js';
import { postgresBackend, sqliteBackend } from '../../test/helpers/storage-backends.js';
import type { AdmissionPlan, AdmissionState } from './billing-types.js';
import type { Storage } from './types.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

describe.each([sqliteBackend, postgresBackend])('billing contract: $name', (backend) => {
  const fixture = billingContractFixture(backend);
  const { fundedAccount, reserveInput, hold, usageFor } = fixture;
  let storage: Storage;
  beforeAll(() => {
    storage = fixture.storage;
  });

  it('credits once per idempotency key, with a ledger entry carrying the running balance', async () => {
    const ids = await fundedAccount(0n);
    const key = uniqueId('topup');
    const big = 123_456_789_012_345_678n; // beyond 2^53: must survive both drivers exactly
    expect(
      await storage.billing.credit({
        accountId: ids.accountId,
        kind: 'topup',
        amountNano: big,
        idempotencyKey: key,
        note: 'n',
        at: NOW,
      }),
    ).toEqual({ applied: true, balanceNano: big });
    expect(
      (
        await storage.billing.credit({
          accountId: ids.accountId,
          kind: 'topup',
          amountNano: big,
          idempotencyKey: key,
          note: 'n',
          at: NOW,
        })
      ).applied,
    ).toBe(false);
    expect((await storage.billing.balance(ids.accountId))?.balanceNano).toBe(big);
    const [entry] = await storage.billing.ledger(ids.accountId, 10);
    expect(entry).toMatchObject({ kind: 'topup', amountNano: big, balanceAfterNano: big, note: 'n' });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('a negative adjustment never takes the balance below zero', async () => {
    const ids = await fundedAccount(1_000n);
    const result = await storage.billing.credit({
      accountId: ids.accountId,
      kind: 'adjustment',
      amountNano: -5_000n,
      idempotencyKey: uniqueId('adj'),
      note: null,
      at: NOW,
    });
    expect(result).toEqual({ applied: true, balanceNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('reserve shows the plan the state under lock, takes the hold, and refuses what the plan refuses', async () => {
    const ids = await fundedAccount(10_000n);
    let seen: AdmissionState | undefined;
    const admitted = await storage.billing.reserve(
      reserveInput(ids, (state) => {
        seen = state;
        return { admitted: true, holdNano: 4_000n, freeTokens: 0, maxOutputTokens: 7 };
      }),
    );
    expect(seen).toEqual({ availableNano: 10_000n, freeTokensLeft: 0 });
    expect(admitted).toMatchObject({ admitted: true, reservation: { holdNano: 4_000n, maxOutputTokens: 7 } });
    const refused = await storage.billing.reserve(reserveInput(ids, () => ({ admitted: false, reason: 'no' })));
    expect(refused).toEqual({ admitted: false, reason: 'no', state: { availableNano: 6_000n, freeTokensLeft: 0 } });
    await expect(storage.billing.reserve(reserveInput(ids, hold(7_000n)))).rejects.toThrow(/exceeds/);
    expect((await storage.billing.balance(ids.accountId))?.reservedNano).toBe(4_000n);
  });

  it('settles once: usage row, charge, ledger entry, hold released; a second settlement changes nothing', async () => {
    const ids = await fundedAccount(10_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(4_000n)));
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    const price = costing(1_500n);
    expect(await storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(requestId, ids), price })).toEqual({
      settled: true,
      chargedNano: 1_500n,
      unbilledNano: 0n,
      unbilledTokens: 0,
      freeTokensUsed: 0,
    });
    expect(await storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(requestId, ids), price })).toEqual({
      settled: false,
      reason: 'already_settled',
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 8_500n, reservedNano: 0n });
    const [row] = await storage.usage.listByAccount(ids.accountId, 10);
    expect(row).toMatchObject({ requestId, costNano: 1_500n, unbilledNano: 0n });
    expect((await storage.billing.ledger(ids.accountId, 10)).filter((entry) => entry.kind === 'usage')).toHaveLength(1);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('never charges below zero: the shortfall is recorded as unbilled', async () => {
    const ids = await fundedAccount(1_000n);
    const requestId = uniqueId('req');
    const result = await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: usageFor(requestId, ids),
      price: costing(1_700n),
    });
    expect(result).toEqual({
      settled: true,
      chargedNano: 1_000n,
      unbilledNano: 700n,
      unbilledTokens: 700,
      freeTokensUsed: 0,
    });
    expect((await storage.billing.balance(ids.accountId))?.balanceNano).toBe(0n);
    const [line] = await storage.billing.ledger(ids.accountId, 1);
    expect(line).toMatchObject({ kind: 'usage', amountNano: -1_000n, unbilledTokens: 700, unbilledNano: 700n });
  });

  it("usage past the hold's estimate is free up to what is left of the day's allowance; the rest unbilled, on the ledger too", async () => {
    const ids = await fundedAccount(0n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(0n, 100), { freeAllowanceTokens: 1_000 }));
    if (!reserved.admitted) throw new Error('refused');
    const requestId = reserved.reservation.requestId;
    const result = await storage.billing.settle({
      freeAllowanceTokens: 1_000,
      usage: usageFor(requestId, ids),
      heldFreeTokens: 100,
      price: costing(1_500n),
    });
    // 1,500 reported: 100 held free + 900 left today free, nothing billed (no balance), 500 unbilled.
    expect(result).toEqual({
      settled: true,
      chargedNano: 0n,
      unbilledNano: 500n,
      unbilledTokens: 500,
      freeTokensUsed: 1_000,
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      balanceNano: 0n,
      reservedNano: 0n,
      freeUsedTokens: 1_000,
      freeReservedTokens: 0,
    });
    const [row] = await storage.usage.listByAccount(ids.accountId, 10);
    expect(row).toMatchObject({ freeTokens: 1_000, costNano: 0n, unbilledTokens: 500, unbilledNano: 500n });
    expect(row!.freeTokens + row!.unbilledTokens! + Number(row!.costNano)).toBe(1_500);
    const usageLines = (await storage.billing.ledger(ids.accountId, 10)).filter((entry) => entry.kind === 'usage');
    expect(usageLines).toMatchObject([{ requestId, amountNano: 0n, unbilledTokens: 500, unbilledNano: 500n }]);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it("a funded account's usage past the hold takes today's free tokens before its balance", async () => {
    const ids = await fundedAccount(10_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(200n, 100), { freeAllowanceTokens: 1_000 }));
    if (!reserved.admitted) throw new Error('refused');
    const result = await storage.billing.settle({
      freeAllowanceTokens: 1_000,
      usage: usageFor(reserved.reservation.requestId, ids),
      heldFreeTokens: 100,
      price: costing(1_500n),
    });
    expect(result).toEqual({
      settled: true,
      chargedNano: 500n,
      unbilledNano: 0n,
      unbilledTokens: 0,
      freeTokensUsed: 1_000,
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_500n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('tracks the free allowance per UTC day: held at admission, used at settlement, reset the next day', async () => {
    const ids = await fundedAccount(0n);
    let state: AdmissionState | undefined;
    const plan = (s: AdmissionState): AdmissionPlan => {
      state = s;
      return { admitted: true, holdNano: 0n, freeTokens: 300, maxOutputTokens: 10 };
    };
    const first = await storage.billing.reserve(reserveInput(ids, plan, { freeAllowanceTokens: 1_000 }));
    expect(state).toEqual({ availableNano: 0n, freeTokensLeft: 1_000 });
    await storage.billing.reserve(reserveInput(ids, plan, { freeAllowanceTokens: 1_000 }));
    expect(state).toEqual({ availableNano: 0n, freeTokensLeft: 700 });
    const requestId = first.admitted ? first.reservation.requestId : '';
    await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: usageFor(requestId, ids),
      price: costing(120n),
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      freeDay: DAY,
      freeUsedTokens: 120,
      freeReservedTokens: 300,
    });
    await storage.billing.reserve(reserveInput(ids, plan, { freeAllowanceTokens: 1_000, day: DAY + 1 }));
    expect(state).toEqual({ availableNano: 0n, freeTokensLeft: 1_000 });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      freeDay: DAY + 1,
      freeUsedTokens: 0,
      freeReservedTokens: 300,
    });
  });

  it("a hold of an earlier day is priced with its own day's free tokens; today's counters do not move", async () => {
    const ids = await fundedAccount(10_000n);
    const price = costing(1_000n);
    const freeHold = (): AdmissionPlan => ({ admitted: true, holdNano: 2_000n, freeTokens: 300, maxOutputTokens: 10 });
    for (const hint of [300, undefined]) {
      // Held on DAY; the account then moves to the next day (another request) before this one settles.
      const yesterday = await storage.billing.reserve(reserveInput(ids, freeHold, { freeAllowanceTokens: 1_000 }));
      const today = await storage.billing.reserve(
        reserveInput(ids, hold(0n, 100), { freeAllowanceTokens: 1_000, day: DAY + 1 }),
      );
      if (!yesterday.admitted || !today.admitted) throw new Error('refused');
      const result = await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(yesterday.reservation.requestId, ids),
        price,
        ...(hint === undefined ? {} : { heldFreeTokens: hint }),
      });
      // The hold's 300 free tokens of DAY; none left of DAY+1's allowance counts for it.
      expect(result).toEqual({
        settled: true,
        chargedNano: 700n,
        unbilledNano: 0n,
        unbilledTokens: 0,
        freeTokensUsed: 300,
      });
      // DAY+1's counters: only the other request's hold, nothing used.
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        reservedNano: 0n,
        freeDay: DAY + 1,
        freeUsedTokens: 0,
        freeReservedTokens: 100,
      });
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(today.reservation.requestId, ids),
        price: costing(0n),
      });
    }
    expect((await storage.billing.balance(ids.accountId))?.balanceNano).toBe(10_000n - 2n * 700n);
    const records = await storage.usage.listByAccount(ids.accountId, 10);
    expect(records.map((record) => record.freeTokens).sort()).toEqual([0, 0, 300, 300]);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('settlement prices with the free tokens the stored hold carries, whatever the caller hints', async () => {
    const ids = await fundedAccount(10_000n);
    const plan = (): AdmissionPlan => ({ admitted: true, holdNano: 2_000n, freeTokens: 300, maxOutputTokens: 10 });
    const price = costing(1_000n);
    for (const hint of [undefined, 300, 5]) {
      const reserved = await storage.billing.reserve(reserveInput(ids, plan, { freeAllowanceTokens: 1_000_000 }));
      if (!reserved.admitted) throw new Error('refused');
      const result = await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(reserved.reservation.requestId, ids),
        price,
        ...(hint === undefined ? {} : { heldFreeTokens: hint }),
      });
      expect(result).toEqual({
        settled: true,
        chargedNano: 700n,
        unbilledNano: 0n,
        unbilledTokens: 0,
        freeTokensUsed: 300,
      });
    }
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      balanceNano: 10_000n - 3n * 700n,
      reservedNano: 0n,
      freeUsedTokens: 900,
      freeReservedTokens: 0,
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('an account hint that promises more than the account has admits nothing beyond the real balance', async () => {
    const ids = await fundedAccount(10_000n);
    const rich = { balance: 10n ** 15n, reserved: 0n, freeDay: DAY, freeUsed: 0, freeReserved: 0 };
    const plan = (state: AdmissionState): AdmissionPlan =>
      state.availableNano >= 50_000n
        ? { admitted: true, holdNano: 50_000n, freeTokens: 0, maxOutputTokens: 5 }
        : { admitted: false, reason: 'too poor' };
    expect(await storage.billing.reserve(reserveInput(ids, plan, { accountHint: rich }))).toEqual({
      admitted: false,
      reason: 'too poor',
      state: { availableNano: 10_000n, freeTokensLeft: 0 },
    });
    // Free tokens the hint says are left but the account has used: the hold takes none it does not have.
    const generous = { ...rich, balance: 10_000n };
    const freePlan = (state: AdmissionState): AdmissionPlan => ({
      admitted: true,
      holdNano: 0n,
      freeTokens: Math.min(state.freeTokensLeft, 500),
      maxOutputTokens: 5,
    });
    await storage.billing.reserve(reserveInput(ids, freePlan, { freeAllowanceTokens: 500 }));
    const second = await storage.billing.reserve(
      reserveInput(ids, freePlan, { freeAllowanceTokens: 500, accountHint: generous }),
    );
    expect(second).toMatchObject({ admitted: true, reservation: { freeTokens: 0 } });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      balanceNano: 10_000n,
      reservedNano: 0n,
      freeReservedTokens: 500,
    });
  });

  it('under concurrency, holds never exceed the balance (one atomic admission per request)', async () => {
    const ids = await fundedAccount(20_000n);
    const plan = (state: AdmissionState): AdmissionPlan =>
      state.availableNano >= 1_000n
        ? { admitted: true, holdNano: 1_000n, freeTokens: 0, maxOutputTokens: 1 }
        : { admitted: false, reason: 'empty' };
    const results = await Promise.all(
      Array.from({ length: 60 }, () => storage.billing.reserve(reserveInput(ids, plan))),
    );
    expect(results.filter((result) => result.admitted)).toHaveLength(20);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 20_000n, reservedNano: 20_000n });
  });

  it('admissions and settlements interleaved with other write transactions keep every balance equal to its ledger', async () => {
    // On SQLite the hot calls run synchronously beside Kysely's transactions on the same handle (sqlite-group-commit.ts):
    // while one of those is open they must wait for it, never run inside it.
    const ids = await fundedAccount(1_000_000n);
    const price = costing(700n);
    const oneRequest = async () => {
      const reserved = await storage.billing.reserve(reserveInput(ids, hold(1_000n)));
      if (!reserved.admitted) throw new Error('refused');
      return storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(reserved.reservation.requestId, ids),
        price,
      });
    };
    const topUp = () =>
      storage.billing.credit({
        accountId: ids.accountId,
        kind: 'topup',
        amountNano: 300n,
        idempotencyKey: uniqueId('topup'),
        note: null,
        at: NOW,
      });
    // A credit to an unknown account fails inside its transaction, which rolls back: work run inside it would be lost.
    const failingCredit = () =>
      storage.billing
        .credit({
          accountId: 'no-such-account',
          kind: 'topup',
          amountNano: 1n,
          idempotencyKey: uniqueId('topup'),
          note: null,
          at: NOW,
        })
        .then(
          () => 'credited',
          () => 'refused',
        );
    // Staggered over a few event-loop turns and microtask hops, so calls land while other transactions are open.
    const later = async (index: number) => {
      for (let turn = 0; turn < index % 4; turn += 1) await new Promise((resolve) => setImmediate(resolve));
      for (let hop = 0; hop < index % 7; hop += 1) await Promise.resolve();
    };
    const work = Array.from({ length: 60 }, async (_, index) => {
      await later(index);
      return index % 3 === 0 ? oneRequest() : index % 6 === 1 ? topUp() : failingCredit();
    });
    const results = await Promise.all(work);
    expect(
      results.filter((result) => typeof result === 'object' && 'settled' in result && result.settled),
    ).toHaveLength(20);
    expect(results.filter((result) => result === 'refused')).toHaveLength(30);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      balanceNano: 1_000_000n - 20n * 700n + 10n * 300n,
      reservedNano: 0n,
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('redeems a code once; an unknown or used code changes nothing', async () => {
    const ids = await fundedAccount(0n);
    const codeHash = uniqueId('code');
    await storage.billing.createRedemptionCodes([{ codeHash, amountNano: 5_000_000_000n }], NOW);
    expect(await storage.billing.redeem(codeHash, ids.accountId, NOW)).toEqual({
      redeemed: true,
      amountNano: 5_000_000_000n,
      balanceNano: 5_000_000_000n,
    });
    expect(await storage.billing.redeem(codeHash, ids.accountId, NOW)).toEqual({
      redeemed: false,
      reason: 'already_redeemed',
    });
    expect(await storage.billing.redeem('nope', ids.accountId, NOW)).toEqual({
      redeemed: false,
      reason: 'unknown_code',
    });
    expect((await storage.billing.balance(ids.accountId))?.balanceNano).toBe(5_000_000_000n);
  });
});
