/**
 * The billing half of the storage contract, run against SQLite and the real PostgreSQL: money moves only with
 * a ledger entry, holds are atomic under concurrency, settlement happens once, nothing goes below zero.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import type {
  AdmissionPlan,
  AdmissionState,
  HoldCheckpoint,
  OrphanedHold,
  ReserveInput,
  SliceInput,
} from './billing-types.js';
import type { Storage, UsageRecord } from './types.js';
import { planSliceGrant } from '../billing/slice-grant.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

const DAY = 20_000;
const NOW = DAY * 86_400_000 + 3_600_000;
const uniqueId = (prefix: string): string => `${prefix}-${randomUUID()}`;

describe.each([sqliteBackend, postgresBackend])('billing contract: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function fundedAccount(nano: bigint) {
    const account = await storage.accounts.create({
      id: uniqueId('acct'),
      email: `${uniqueId('u')}@example.com`,
      passwordHash: 'x',
      role: 'user',
      tier: 'standard',
      createdAt: NOW,
    });
    const key = await storage.apiKeys.create({
      id: uniqueId('key'),
      accountId: account.id,
      name: 'k',
      keyHash: uniqueId('h'),
      hint: 'h',
      createdAt: NOW,
      expiresAt: null,
    });
    if (nano > 0n)
      await storage.billing.credit({
        accountId: account.id,
        kind: 'topup',
        amountNano: nano,
        idempotencyKey: uniqueId('topup'),
        note: null,
        at: NOW,
      });
    return { accountId: account.id, keyId: key.id };
  }

  function reserveInput(
    ids: { accountId: string; keyId: string },
    plan: (state: AdmissionState) => AdmissionPlan,
    overrides: Partial<ReserveInput> = {},
  ): ReserveInput {
    return {
      requestId: uniqueId('req'),
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      day: DAY,
      freeAllowanceTokens: 0,
      createdAt: NOW,
      expiresAt: NOW + 60_000,
      plan,
      ...overrides,
    };
  }

  const hold =
    (holdNano: bigint, freeTokens = 0): (() => AdmissionPlan) =>
    () => ({ admitted: true, holdNano, freeTokens, maxOutputTokens: 100 });

  function usageFor(requestId: string, ids: { accountId: string; keyId: string }): UsageRecord {
    return {
      requestId,
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      model: 'beta-5.4',
      family: 'beta',
      inputTokens: 10,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 5,
      reasoningTokens: 0,
      status: 'ok',
      stream: false,
      latencyMs: 5,
      createdAt: NOW,
      rawUsage: null,
      costNano: 0n,
      freeTokens: 0,
      unbilledNano: 0n,
    };
  }

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

  describe('key spend limits', () => {
    const MONTH = 2024 * 12 + 9; // NOW is 2024-10-04 UTC
    async function limitedKey(accountNano: bigint, limitNano: bigint, period: 'day' | 'month' | 'total' = 'day') {
      const ids = await fundedAccount(accountNano);
      const key = await storage.apiKeys.create({
        id: uniqueId('key'),
        accountId: ids.accountId,
        name: 'limited',
        keyHash: uniqueId('h'),
        hint: 'h',
        createdAt: NOW,
        expiresAt: null,
        permissions: { scopes: null, models: null, spendLimit: { limitNano, period }, rateLimit: null },
      });
      return { accountId: ids.accountId, keyId: key.id };
    }
    const keyOf = async (ids: { accountId: string; keyId: string }) =>
      (await storage.apiKeys.findById(ids.accountId, ids.keyId))!;
    const upTo =
      (want: bigint) =>
      (state: AdmissionState): AdmissionPlan =>
        state.availableNano >= want
          ? { admitted: true, holdNano: want, freeTokens: 0, maxOutputTokens: 1 }
          : { admitted: false, reason: 'short' };

    it('the planner sees the lower of the balance and the key remaining limit, and the hold counts against the key', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      let seen: AdmissionState | undefined;
      const result = await storage.billing.reserve(
        reserveInput(
          ids,
          (state) => {
            seen = state;
            return upTo(2_000n)(state);
          },
          { keySpendLimited: true },
        ),
      );
      expect(seen).toMatchObject({
        availableNano: 5_000n,
        keySpend: { limitNano: 5_000n, spentNano: 0n, reservedNano: 0n, remainingNano: 5_000n, binding: true },
      });
      expect(result).toMatchObject({ admitted: true, reservation: { holdNano: 2_000n, keyHoldNano: 2_000n } });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 2_000n });
      if (!result.admitted) throw new Error('not admitted');
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(result.reservation.requestId, ids),
        price: costing(1_500n),
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 1_500n, reservedNano: 0n });
      let second: AdmissionState | undefined;
      await storage.billing.reserve(
        reserveInput(
          ids,
          (state) => {
            second = state;
            return { admitted: false, reason: 'look' };
          },
          { keySpendLimited: true },
        ),
      );
      expect(second).toMatchObject({ availableNano: 3_500n, keySpend: { spentNano: 1_500n, remainingNano: 3_500n } });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it("usage past the key's hold is charged up to its limit, the rest unbilled; the key never spends past it", async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const results = await Promise.all(
        Array.from({ length: 4 }, () =>
          storage.billing.reserve(reserveInput(ids, upTo(1_000n), { keySpendLimited: true })),
        ),
      );
      const settled = await Promise.all(
        results.map((result) =>
          result.admitted
            ? storage.billing.settle({
                freeAllowanceTokens: 0,
                usage: usageFor(result.reservation.requestId, ids),
                price: costing(2_000n),
              })
            : undefined,
        ),
      );
      const charged = settled.reduce((sum, result) => sum + (result?.settled ? result.chargedNano : 0n), 0n);
      const unbilled = settled.reduce((sum, result) => sum + (result?.settled ? result.unbilledNano : 0n), 0n);
      expect(charged).toBe(5_000n);
      expect(charged + unbilled).toBe(8_000n);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 5_000n, reservedNano: 0n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 95_000n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('a limit lowered while a request runs caps its charge: the hold taken under the old limit is no licence', async () => {
      const ids = await limitedKey(100_000n, 10_000n);
      const result = await storage.billing.reserve(reserveInput(ids, upTo(4_000n), { keySpendLimited: true }));
      if (!result.admitted) throw new Error('not admitted');
      await storage.apiKeys.update(ids.accountId, ids.keyId, { spendLimit: { limitNano: 1_000n, period: 'day' } }, NOW);
      // Within the hold, the balance and the hint: only the key's current limit stands in the way.
      const settled = await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(result.reservation.requestId, ids),
        price: costing(3_000n),
        heldFreeTokens: 0,
      });
      expect(settled).toMatchObject({
        settled: true,
        chargedNano: 1_000n,
        unbilledNano: 2_000n,
        unbilledTokens: 2_000,
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 1_000n, reservedNano: 0n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 99_000n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('under concurrency, holds on one key never exceed its limit; settlements add the spend in the same transaction', async () => {
      const ids = await limitedKey(1_000_000n, 20_000n, 'month');
      const results = await Promise.all(
        Array.from({ length: 60 }, () =>
          storage.billing.reserve(reserveInput(ids, upTo(1_000n), { keySpendLimited: true })),
        ),
      );
      expect(results.filter((result) => result.admitted)).toHaveLength(20);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: MONTH, usedNano: 0n, reservedNano: 20_000n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 20_000n });
      await Promise.all(
        results.map((result) =>
          result.admitted
            ? storage.billing.settle({
                freeAllowanceTokens: 0,
                usage: usageFor(result.reservation.requestId, ids),
                price: costing(700n),
              })
            : undefined,
        ),
      );
      expect((await keyOf(ids)).spend).toEqual({ periodStart: MONTH, usedNano: 14_000n, reservedNano: 0n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: 1_000_000n - 14_000n,
        reservedNano: 0n,
      });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('a stale hint of the key counters (as read with the key) admits nothing beyond the limit', async () => {
      const ids = await limitedKey(1_000_000n, 20_000n);
      const hint = { limitNano: 20_000n, period: 'day' as const, periodStart: 0, usedNano: 0n, reservedNano: 0n };
      const results = await Promise.all(
        Array.from({ length: 60 }, () =>
          storage.billing.reserve(reserveInput(ids, upTo(1_000n), { keySpendLimited: true, keySpendHint: hint })),
        ),
      );
      expect(results.filter((result) => result.admitted)).toHaveLength(20);
      expect(results.every((result) => !result.admitted || result.reservation.keyHoldNano === 1_000n)).toBe(true);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 20_000n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 20_000n });
      // A hint that says the key has a limit it no longer has (or a period it no longer has) takes nothing on trust.
      await storage.apiKeys.update(
        ids.accountId,
        ids.keyId,
        { spendLimit: { limitNano: 20_000n, period: 'month' } },
        NOW,
      );
      const after = await storage.billing.reserve(
        reserveInput(ids, upTo(1_000n), { keySpendLimited: true, keySpendHint: hint }),
      );
      expect(after).toMatchObject({ admitted: false, state: { keySpend: { period: 'month', remainingNano: 0n } } });
    });

    it('a new UTC day restarts a daily limit; a settlement of the previous day does not count against the new one', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const first = await storage.billing.reserve(reserveInput(ids, upTo(4_000n), { keySpendLimited: true }));
      if (!first.admitted) throw new Error('not admitted');
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(first.reservation.requestId, ids),
        price: costing(4_000n),
      });
      const refused = await storage.billing.reserve(reserveInput(ids, upTo(2_000n), { keySpendLimited: true }));
      expect(refused).toMatchObject({ admitted: false, state: { keySpend: { remainingNano: 1_000n, binding: true } } });
      // A request of day N still running when day N+1 starts, and a new one of day N+1.
      const late = await storage.billing.reserve(reserveInput(ids, upTo(500n), { keySpendLimited: true }));
      const tomorrow = NOW + 86_400_000;
      const next = await storage.billing.reserve(
        reserveInput(ids, upTo(4_000n), { keySpendLimited: true, day: DAY + 1, createdAt: tomorrow }),
      );
      expect(next).toMatchObject({ admitted: true });
      if (!late.admitted) throw new Error('not admitted');
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(late.reservation.requestId, ids),
        price: costing(300n),
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY + 1, usedNano: 0n, reservedNano: 4_000n });
    });

    it('the sweeper releases the key hold of an abandoned request', async () => {
      const ids = await limitedKey(100_000n, 5_000n, 'total');
      await storage.billing.reserve(reserveInput(ids, upTo(3_000n), { keySpendLimited: true, expiresAt: NOW + 10 }));
      expect((await keyOf(ids)).spend.reservedNano).toBe(3_000n);
      await storage.billing.releaseExpiredReservations(NOW + 1_000);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: 0, usedNano: 0n, reservedNano: 0n });
    });

    it('slices grow the key hold within its remaining limit: a partial slice, then a key_spend_limit refusal (growing holds)', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const reserved = await storage.billing.reserve(reserveInput(ids, upTo(1_000n), { keySpendLimited: true }));
      if (!reserved.admitted) throw new Error('not admitted');
      const requestId = reserved.reservation.requestId;
      const slice = (tokens: number) =>
        storage.billing.grantSlice(sliceInput(requestId, ids, tokens, { keySpendLimited: true, at: NOW }));
      // A whole slice the key can pay (PostgreSQL: the one-statement path)...
      expect(await slice(200)).toEqual({
        granted: true,
        tokens: 200,
        holdNano: 2_000n,
        freeTokens: 0,
        keyHoldNano: 2_000n,
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 3_000n });
      // ...then the 2,000 nano the key has left of its 5,000, though the account has 97,000 more: 200 of 400 tokens.
      expect(await slice(400)).toEqual({
        granted: true,
        tokens: 200,
        holdNano: 2_000n,
        freeTokens: 0,
        keyHoldNano: 2_000n,
      });
      expect(await slice(400)).toMatchObject({
        granted: false,
        reason: 'key_spend_limit',
        state: { availableNano: 0n, keySpend: { remainingNano: 0n, binding: true } },
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 5_000n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: 100_000n,
        reservedNano: 5_000n,
      });
      // Settlement releases the whole grown key hold and counts the charge.
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(requestId, ids),
        price: costing(4_800n),
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 4_800n, reservedNano: 0n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 95_200n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('concurrent slices on one key never hold more than its limit', async () => {
      const ids = await limitedKey(1_000_000n, 20_000n);
      const requestIds: string[] = [];
      for (let index = 0; index < 10; index += 1) {
        const reserved = await storage.billing.reserve(reserveInput(ids, upTo(100n), { keySpendLimited: true }));
        if (reserved.admitted) requestIds.push(reserved.reservation.requestId);
      }
      // 19,000 nano left on the key (the account has 999,000): 60 slices of 1,000 nano each ask for 60,000.
      const grants = await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          storage.billing.grantSlice(sliceInput(requestIds[index % 10]!, ids, 100, { keySpendLimited: true, at: NOW })),
        ),
      );
      const granted = grants.reduce((sum, grant) => sum + (grant.granted ? grant.holdNano : 0n), 0n);
      expect(granted).toBe(19_000n);
      expect(
        grants.filter((grant) => !grant.granted).every((grant) => !grant.granted && grant.reason === 'key_spend_limit'),
      ).toBe(true);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 20_000n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 20_000n });
      await Promise.all(
        requestIds.map((requestId) =>
          storage.billing.settle({
            freeAllowanceTokens: 0,
            usage: usageFor(requestId, ids),
            price: costing(1_500n),
          }),
        ),
      );
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 15_000n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('the sweeper settles an orphaned grown hold at its checkpoint: the key hold released, the charge counted against the key', async () => {
      const ids = await limitedKey(100_000n, 50_000n, 'total');
      const checkpointed = await storage.billing.reserve(
        reserveInput(ids, upTo(2_000n), { keySpendLimited: true, expiresAt: NOW + 10 }),
      );
      const bare = await storage.billing.reserve(
        reserveInput(ids, upTo(3_000n), { keySpendLimited: true, expiresAt: NOW + 10 }),
      );
      if (!checkpointed.admitted || !bare.admitted) throw new Error('not admitted');
      expect(
        await storage.billing.grantSlice(
          sliceInput(checkpointed.reservation.requestId, ids, 100, {
            keySpendLimited: true,
            at: NOW,
            expiresAt: NOW + 20,
            checkpoint: checkpointOf(60),
          }),
        ),
      ).toMatchObject({ granted: true, keyHoldNano: 1_000n });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: 0, usedNano: 0n, reservedNano: 6_000n });
      const bill = (orphan: OrphanedHold) =>
        orphan.checkpoint === null
          ? undefined
          : {
              usage: { ...usageFor(orphan.requestId, ids), status: 'instance_lost' },
              price: costing(1_700n),
              freeAllowanceTokens: 0,
            };
      expect(await storage.billing.sweepExpiredReservations(NOW + 1_000, bill)).toMatchObject({
        released: 1,
        settled: 1,
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: 0, usedNano: 1_700n, reservedNano: 0n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 98_300n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('a limit set later counts the period spend so far (daily rollup); keys without a limit count nothing', async () => {
      const ids = await fundedAccount(100_000n);
      const result = await storage.billing.reserve(reserveInput(ids, upTo(3_000n)));
      if (!result.admitted) throw new Error('not admitted');
      expect(result.reservation.keyHoldNano).toBe(0n);
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(result.reservation.requestId, ids),
        price: costing(2_500n),
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: 0, usedNano: 0n, reservedNano: 0n });
      const updated = await storage.apiKeys.update(
        ids.accountId,
        ids.keyId,
        { spendLimit: { limitNano: 3_000n, period: 'day' } },
        NOW + 5_000,
      );
      expect(updated?.spend).toEqual({ periodStart: DAY, usedNano: 2_500n, reservedNano: 0n });
      expect(updated?.permissions.spendLimit).toEqual({ limitNano: 3_000n, period: 'day' });
      const refused = await storage.billing.reserve(reserveInput(ids, upTo(1_000n), { keySpendLimited: true }));
      expect(refused).toMatchObject({
        admitted: false,
        state: { keySpend: { spentNano: 2_500n, remainingNano: 500n } },
      });
    });
  });

  it('admissions and settlements interleaved with other write transactions keep every balance equal to its ledger', async () => {
    // On SQLite the hot calls run synchronously beside Kysely's transactions on the same handle (sqlite-hot-path.ts):
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

  it('extends a live hold forward only, and reports a hold that is gone', async () => {
    const ids = await fundedAccount(10_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(1_000n), { expiresAt: NOW + 1_000 }));
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    expect(await storage.billing.extendHold(requestId, NOW + 5_000)).toBe(true);
    expect(await storage.billing.extendHold(requestId, NOW + 2_000)).toBe(true);
    // Still held at NOW + 4 s: the later expiry stood.
    await storage.billing.releaseExpiredReservations(NOW + 4_000);
    expect((await storage.billing.balance(ids.accountId))?.reservedNano).toBe(1_000n);
    await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: usageFor(requestId, ids),
      price: costing(10n),
    });
    expect(await storage.billing.extendHold(requestId, NOW + 9_000)).toBe(false);
  });

  it('the sweeper releases expired holds once, even when sweeps run at once; a late settlement still bills', async () => {
    const ids = await fundedAccount(10_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(3_000n), { expiresAt: NOW + 10 }));
    const [a, b] = await Promise.all([
      storage.billing.releaseExpiredReservations(NOW + 1_000),
      storage.billing.releaseExpiredReservations(NOW + 1_000),
    ]);
    expect(a! + b!).toBeGreaterThanOrEqual(1);
    expect((await storage.billing.balance(ids.accountId))?.reservedNano).toBe(0n);
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: usageFor(requestId, ids),
      price: costing(500n),
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_500n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  const checkpointOf = (outputTokens: number, at = NOW + 500): HoldCheckpoint => ({
    model: 'beta-5.4',
    family: 'beta',
    stream: true,
    inputTokens: 10,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens,
    at,
  });

  it('renews live holds and writes their checkpoints in one batch; reports the holds that are gone', async () => {
    const ids = await fundedAccount(10_000n);
    const first = await storage.billing.reserve(reserveInput(ids, hold(1_000n), { expiresAt: NOW + 1_000 }));
    const second = await storage.billing.reserve(reserveInput(ids, hold(1_000n), { expiresAt: NOW + 1_000 }));
    const [a, b] = [first, second].map((result) => (result.admitted ? result.reservation.requestId : ''));
    const gone = await storage.billing.renewHolds([
      { requestId: a!, expiresAt: NOW + 5_000, checkpoint: checkpointOf(40) },
      { requestId: b!, expiresAt: NOW + 5_000 },
      { requestId: 'req-never-held', expiresAt: NOW + 5_000 },
    ]);
    expect([...gone]).toEqual(['req-never-held']);
    // Both outlive NOW + 4 s; the one with a checkpoint is then settled at it, the other released free.
    expect(
      await storage.billing.sweepExpiredReservations(NOW + 4_000, () => ({
        usage: usageFor('x', ids),
        price: costing(1n),
        freeAllowanceTokens: 0,
      })),
    ).toMatchObject({ released: 0, settled: 0 });
    const billed: OrphanedHold[] = [];
    const swept = await storage.billing.sweepExpiredReservations(NOW + 6_000, (orphan) => {
      billed.push(orphan);
      if (orphan.checkpoint === null) return undefined;
      const usage = {
        ...usageFor(orphan.requestId, ids),
        outputTokens: orphan.checkpoint.outputTokens,
        status: 'instance_lost',
      };
      return { usage, price: costing(700n), freeAllowanceTokens: 0 };
    });
    expect(swept).toMatchObject({ released: 1, settled: 1 });
    expect(billed.find((orphan) => orphan.requestId === a)).toMatchObject({
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      createdAt: NOW,
      checkpoint: checkpointOf(40),
    });
    expect(billed.find((orphan) => orphan.requestId === b)?.checkpoint).toBeNull();
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_300n, reservedNano: 0n });
    const records = await storage.usage.listByAccount(ids.accountId, 10);
    expect(records).toMatchObject([{ requestId: a, status: 'instance_lost', outputTokens: 40, costNano: 700n }]);
    expect((await storage.billing.ledger(ids.accountId, 10)).filter((entry) => entry.kind === 'usage')).toMatchObject([
      { requestId: a, amountNano: -700n },
    ]);
    // A late settlement of the same request (its instance was only stalled) is a duplicate: billed once.
    expect(
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(a!, ids),
        price: costing(900n),
      }),
    ).toEqual({ settled: false, reason: 'already_settled' });
    expect(await storage.billing.renewHolds([{ requestId: a!, expiresAt: NOW + 9_000 }])).toEqual(new Set([a]));
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('a swept hold that cannot pay its checkpoint reports the unbilled part; the rollup and summaries carry it', async () => {
    const ids = await fundedAccount(500n);
    const held = await storage.billing.reserve(reserveInput(ids, hold(500n), { expiresAt: NOW + 1_000 }));
    if (!held.admitted) throw new Error('not admitted');
    const { requestId } = held.reservation;
    await storage.billing.renewHolds([{ requestId, expiresAt: NOW + 2_000, checkpoint: checkpointOf(40) }]);
    const swept = await storage.billing.sweepExpiredReservations(NOW + 6_000, (orphan) => ({
      usage: { ...usageFor(orphan.requestId, ids), status: 'instance_lost' },
      price: costing(800n),
      freeAllowanceTokens: 0,
    }));
    expect(swept).toEqual({
      released: 0,
      settled: 1,
      unbilled: [{ model: 'beta-5.4', tokens: 300, nanoUsd: 300n }],
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 0n, reservedNano: 0n });
    expect(await storage.billing.ledger(ids.accountId, 1)).toMatchObject([
      { kind: 'usage', requestId, amountNano: -500n, unbilledTokens: 300, unbilledNano: 300n },
    ]);
    const day = new Date(NOW).toISOString().slice(0, 10);
    expect(await storage.usage.dailyTotals(ids.accountId, day, day)).toMatchObject([
      { requests: 1, costNano: 500n, unbilledTokens: 300, unbilledNano: 300n },
    ]);
    // The summary over whole days reads the rollup; over part of a day, the usage rows: both carry it.
    for (const [from, to] of [
      [DAY * 86_400_000, (DAY + 1) * 86_400_000],
      [NOW - 1, NOW + 1],
    ] as const) {
      expect(await storage.billing.usageSummary(ids.accountId, from, to, 'model')).toMatchObject([
        { group: 'beta-5.4', requests: 1, costNano: 500n, unbilledTokens: 300, unbilledNano: 300n },
      ]);
    }
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('keeps 1-hour cache writes apart in the usage row, its daily rollup and the summaries', async () => {
    const ids = await fundedAccount(100_000_000n);
    const requestId = uniqueId('req');
    const usage = {
      ...usageFor(requestId, ids),
      model: 'alpha-sonnet-5',
      family: 'alpha',
      inputTokens: 500,
      cacheReadTokens: 10_000,
      cacheWriteTokens: 3_000,
      cacheWrite1hTokens: 1_000,
      outputTokens: 300,
    };
    await storage.billing.settle({ freeAllowanceTokens: 0, usage, price: costing(22_500_000n) });
    const split = { cacheReadTokens: 10_000, cacheWriteTokens: 3_000, cacheWrite1hTokens: 1_000 };
    expect(await storage.usage.listByAccount(ids.accountId, 10)).toMatchObject([
      { requestId, ...split, costNano: 22_500_000n },
    ]);
    expect(await storage.usage.findByRequestIds(ids.accountId, [requestId])).toMatchObject([split]);
    const day = new Date(DAY * 86_400_000).toISOString().slice(0, 10);
    expect(await storage.usage.dailyTotals(ids.accountId, day, day)).toMatchObject([{ requests: 1, ...split }]);
    expect(await storage.billing.usageSummary(ids.accountId, 0, NOW + 86_400_000, 'model')).toMatchObject([
      { group: 'alpha-sonnet-5', ...split },
    ]);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('carries 1-hour cache writes in a checkpoint written by a slice, a keyed slice or a renewal', async () => {
    const ids = await fundedAccount(1_000_000n);
    const limited = await storage.apiKeys.create({
      id: uniqueId('key'),
      accountId: ids.accountId,
      name: 'limited',
      keyHash: uniqueId('h'),
      hint: 'h',
      createdAt: NOW,
      expiresAt: null,
      permissions: { scopes: null, models: null, spendLimit: { limitNano: 500_000n, period: 'day' }, rateLimit: null },
    });
    const withWrites = (outputTokens: number, oneHour: number): HoldCheckpoint => ({
      ...checkpointOf(outputTokens),
      cacheWriteTokens: 3_000,
      cacheWrite1hTokens: oneHour,
    });
    const reserved = async (keyed: boolean) => {
      const result = await storage.billing.reserve(
        reserveInput(keyed ? { ...ids, keyId: limited.id } : ids, hold(1_000n), {
          expiresAt: NOW + 1_000,
          ...(keyed ? { keySpendLimited: true } : {}),
        }),
      );
      if (!result.admitted) throw new Error('not admitted');
      return result.reservation.requestId;
    };
    const [bySlice, byKeyedSlice, byRenewal] = [await reserved(false), await reserved(true), await reserved(false)];
    const grant = (requestId: string, checkpoint: HoldCheckpoint, keyed: boolean) =>
      storage.billing.grantSlice({
        requestId,
        accountId: ids.accountId,
        day: DAY,
        at: NOW,
        freeAllowanceTokens: 0,
        tokens: 10,
        outputPriceNano: 10n,
        plan: (state) => planSliceGrant(10, 10n, state),
        expiresAt: NOW + 1_000,
        checkpoint,
        ...(keyed ? { keySpendLimited: true, apiKeyId: limited.id } : {}),
      });
    expect(await grant(bySlice!, withWrites(10, 1_000), false)).toMatchObject({ granted: true });
    expect(await grant(byKeyedSlice!, withWrites(20, 2_000), true)).toMatchObject({ granted: true, keyHoldNano: 100n });
    expect(
      await storage.billing.renewHolds([
        { requestId: byRenewal!, expiresAt: NOW + 1_000, checkpoint: withWrites(30, 3_000) },
      ]),
    ).toEqual(new Set());
    const billed = new Map<string, HoldCheckpoint | null>();
    await storage.billing.sweepExpiredReservations(NOW + 2_000, (orphan) => {
      billed.set(orphan.requestId, orphan.checkpoint);
      return undefined;
    });
    expect(billed.get(bySlice!)).toEqual(withWrites(10, 1_000));
    expect(billed.get(byKeyedSlice!)).toEqual(withWrites(20, 2_000));
    expect(billed.get(byRenewal!)).toEqual(withWrites(30, 3_000));
  });

  it('concurrent sweeps settle an orphaned hold at its checkpoint exactly once', async () => {
    const ids = await fundedAccount(100_000n);
    const requestIds: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const reserved = await storage.billing.reserve(reserveInput(ids, hold(2_000n), { expiresAt: NOW + 10 }));
      if (reserved.admitted) requestIds.push(reserved.reservation.requestId);
    }
    await storage.billing.renewHolds(
      requestIds.map((requestId) => ({ requestId, expiresAt: NOW + 20, checkpoint: checkpointOf(30) })),
    );
    const bill = (orphan: OrphanedHold) => ({
      usage: { ...usageFor(orphan.requestId, ids), status: 'instance_lost' },
      price: costing(1_000n),
      freeAllowanceTokens: 0,
    });
    const sweeps = await Promise.all([1, 2, 3].map(() => storage.billing.sweepExpiredReservations(NOW + 1_000, bill)));
    expect(sweeps.reduce((sum, sweep) => sum + sweep.settled, 0)).toBe(5);
    expect(sweeps.reduce((sum, sweep) => sum + sweep.released, 0)).toBe(0);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 95_000n, reservedNano: 0n });
    expect(await storage.usage.listByAccount(ids.accountId, 10)).toHaveLength(5);
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  function sliceInput(
    requestId: string,
    ids: { accountId: string },
    tokens: number,
    overrides: Partial<SliceInput> = {},
  ): SliceInput {
    return {
      requestId,
      accountId: ids.accountId,
      day: DAY,
      freeAllowanceTokens: 0,
      tokens,
      outputPriceNano: 10n,
      plan: (state) => planSliceGrant(tokens, 10n, state),
      expiresAt: NOW + 60_000,
      ...overrides,
    };
  }

  it('grows a hold a slice at a time: free tokens first, a partial slice when only that is left, then refusals', async () => {
    const ids = await fundedAccount(5_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, hold(1_000n, 100), { freeAllowanceTokens: 150 }));
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    // 50 free tokens are left today: they come first, then 150 tokens at 10 nano.
    expect(
      await storage.billing.grantSlice(
        sliceInput(requestId, ids, 200, { freeAllowanceTokens: 150, checkpoint: checkpointOf(90) }),
      ),
    ).toEqual({ granted: true, tokens: 200, holdNano: 1_500n, freeTokens: 50 });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      reservedNano: 2_500n,
      freeReservedTokens: 150,
    });
    // 2,500 nano are available: 250 of the 400 tokens asked for.
    expect(await storage.billing.grantSlice(sliceInput(requestId, ids, 400, { freeAllowanceTokens: 150 }))).toEqual({
      granted: true,
      tokens: 250,
      holdNano: 2_500n,
      freeTokens: 0,
    });
    expect(
      await storage.billing.grantSlice(sliceInput(requestId, ids, 400, { freeAllowanceTokens: 150 })),
    ).toMatchObject({ granted: false, reason: 'balance', state: { availableNano: 0n, freeTokensLeft: 0 } });
    expect(await storage.billing.holds(ids.accountId, DAY, 150)).toEqual({
      balanceNano: 5_000n,
      reservedNano: 5_000n,
      holds: 1,
      freeTokensLeft: 0,
    });
    // Settlement releases the whole grown hold and its free tokens, and prices with them.
    const settled = await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: usageFor(requestId, ids),
      heldFreeTokens: 150,
      // 1,249 tokens at 1 nano-USD: the 150 free tokens of the hold first, then 1,099 from the balance.
      price: costing(1_249n),
    });
    expect(settled).toMatchObject({ settled: true, chargedNano: 1_099n });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      balanceNano: 3_901n,
      reservedNano: 0n,
      freeReservedTokens: 0,
      freeUsedTokens: 150,
    });
    expect(await storage.billing.grantSlice(sliceInput(requestId, ids, 10))).toMatchObject({
      granted: false,
      reason: 'gone',
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('concurrent slices on one account never hold more than its balance', async () => {
    const ids = await fundedAccount(10_000n);
    const requestIds: string[] = [];
    for (let index = 0; index < 10; index += 1) {
      const reserved = await storage.billing.reserve(reserveInput(ids, hold(100n)));
      if (reserved.admitted) requestIds.push(reserved.reservation.requestId);
    }
    // 9,000 nano left: 60 slices of 100 tokens at 10 nano each ask for 60,000.
    const grants = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        storage.billing.grantSlice(sliceInput(requestIds[index % 10]!, ids, 100)),
      ),
    );
    const granted = grants.reduce((sum, grant) => sum + (grant.granted ? grant.holdNano : 0n), 0n);
    expect(granted).toBe(9_000n);
    expect(grants.filter((grant) => grant.granted)).toHaveLength(9);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 10_000n, reservedNano: 10_000n });
    for (const requestId of requestIds)
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(requestId, ids),
        price: costing(50n),
      });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_500n, reservedNano: 0n });
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

  it('sums usage by day, model and key', async () => {
    const ids = await fundedAccount(1_000_000n);
    // Three requests at different times of one UTC day, and one on the next day.
    const rows = [
      ['beta-5.4', 100n, 0],
      ['beta-5.4', 50n, 3_600_000],
      ['alpha-sonnet-5', 7n, 7_777_777],
    ] as const;
    for (const [model, charge, offset] of rows) {
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: { ...usageFor(uniqueId('req'), ids), model, createdAt: NOW + offset },
        price: costing(charge),
      });
    }
    const byModel = await storage.billing.usageSummary(ids.accountId, 0, NOW + 86_400_000, 'model');
    expect(byModel.map((row) => [row.group, row.requests, row.costNano, row.outputTokens])).toEqual([
      ['alpha-sonnet-5', 1, 7n, 5],
      ['beta-5.4', 2, 150n, 10],
    ]);
    await storage.billing.settle({
      freeAllowanceTokens: 0,
      usage: { ...usageFor(uniqueId('req'), ids), createdAt: NOW + 86_400_000 },
      price: costing(1n),
    });
    expect(await storage.billing.usageSummary(ids.accountId, 0, NOW + 2 * 86_400_000, 'day')).toMatchObject([
      { group: new Date(DAY * 86_400_000).toISOString().slice(0, 10), requests: 3, costNano: 157n },
      { group: new Date((DAY + 1) * 86_400_000).toISOString().slice(0, 10), requests: 1, costNano: 1n },
    ]);
    expect(await storage.billing.usageSummary(ids.accountId, 0, NOW + 86_400_000, 'key')).toMatchObject([
      { group: ids.keyId, requests: 3 },
    ]);
  });

  describe('daily usage rollup', () => {
    const dayIso = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);
    const charge = costing;

    it('settlement adds each request once to its (day, model, key) row; totals by account sum the range', async () => {
      const ids = await fundedAccount(1_000_000n);
      const otherKey = await storage.apiKeys.create({
        id: uniqueId('key'),
        accountId: ids.accountId,
        name: 'k2',
        keyHash: uniqueId('h'),
        hint: 'h',
        createdAt: NOW,
        expiresAt: null,
      });
      const base = (overrides: Partial<UsageRecord>) => ({ ...usageFor(uniqueId('req'), ids), ...overrides });
      const repeated = base({
        inputTokens: 7,
        cacheReadTokens: 2,
        cacheWriteTokens: 1,
        cacheWrite1hTokens: 0,
        outputTokens: 3,
        reasoningTokens: 1,
      });
      await storage.billing.settle({ freeAllowanceTokens: 0, usage: repeated, price: charge(100n) });
      // A second settlement of the same request id must not count again.
      expect(
        (await storage.billing.settle({ freeAllowanceTokens: 0, usage: repeated, price: charge(100n) })).settled,
      ).toBe(false);
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: base({ createdAt: NOW + 3_600_000 }),
        price: charge(50n),
      });
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: base({ model: 'alpha-sonnet-5' }),
        price: charge(7n),
      });
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: base({ apiKeyId: otherKey.id }),
        price: charge(1n),
      });
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: base({ createdAt: NOW + 86_400_000 }),
        price: charge(2n),
      });

      const rows = await storage.usage.dailyTotals(ids.accountId, dayIso(DAY), dayIso(DAY + 1));
      const [keyA, keyB] = [ids.keyId, otherKey.id].sort();
      const expected = [
        { day: dayIso(DAY), model: 'alpha-sonnet-5', apiKeyId: ids.keyId, requests: 1, costNano: 7n },
        ...[keyA, keyB].map((key) =>
          key === ids.keyId
            ? {
                day: dayIso(DAY),
                model: 'beta-5.4',
                apiKeyId: ids.keyId,
                requests: 2,
                inputTokens: 17,
                cacheReadTokens: 2,
                cacheWriteTokens: 1,
                cacheWrite1hTokens: 0,
                outputTokens: 8,
                reasoningTokens: 1,
                costNano: 150n,
              }
            : { day: dayIso(DAY), model: 'beta-5.4', apiKeyId: otherKey.id, requests: 1, costNano: 1n },
        ),
        { day: dayIso(DAY + 1), model: 'beta-5.4', apiKeyId: ids.keyId, requests: 1, costNano: 2n },
      ];
      expect(rows).toHaveLength(4);
      rows.forEach((row, index) => {
        expect(row).toMatchObject(expected[index]!);
      });
      // The range is inclusive at both ends and filters by day.
      expect(
        (await storage.usage.dailyTotals(ids.accountId, dayIso(DAY + 1), dayIso(DAY + 5))).map((row) => row.requests),
      ).toEqual([1]);
      expect(await storage.usage.dailyTotals(ids.accountId, dayIso(DAY - 3), dayIso(DAY - 1))).toEqual([]);

      const totals = await storage.usage.totalsByAccount(dayIso(DAY), dayIso(DAY));
      // tokens = input + cache read + cache write + output (reasoning is part of output): 13 + 15 + 15 + 15.
      expect(totals.find((row) => row.accountId === ids.accountId)).toEqual({
        accountId: ids.accountId,
        requests: 4,
        tokens: 58,
        costNano: 158n,
      });
      // The rollup agrees with the per-request rows it summarises.
      const summary = await storage.billing.usageSummary(ids.accountId, 0, NOW + 2 * 86_400_000, 'day');
      expect(summary.map((row) => [row.group, row.requests, row.costNano])).toEqual([
        [dayIso(DAY), 4, 158n],
        [dayIso(DAY + 1), 1, 2n],
      ]);
    });

    it('stays exact under concurrent settlements of one row, with money beyond 2^53', async () => {
      const ids = await fundedAccount(10n ** 18n);
      const big = 9_007_199_254_740_993n; // 2^53 + 1
      await Promise.all(
        Array.from({ length: 20 }, () =>
          storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(uniqueId('req'), ids), price: charge(big) }),
        ),
      );
      const [row] = await storage.usage.dailyTotals(ids.accountId, dayIso(DAY), dayIso(DAY));
      expect(row).toMatchObject({ requests: 20, inputTokens: 200, outputTokens: 100, costNano: big * 20n });
    });

    it('rejects a day that is not YYYY-MM-DD', async () => {
      await expect(storage.usage.dailyTotals('a', '2026-02-30', '2026-03-01')).rejects.toThrow(RangeError);
      await expect(storage.usage.totalsByAccount('2026-1-1', '2026-03-01')).rejects.toThrow(RangeError);
    });

    it('retention deletes old per-request rows in batches and keeps the daily totals', async () => {
      const ids = await fundedAccount(1_000_000n);
      // Far in the past, so other cases' rows are never old enough to be deleted by this one.
      const old = NOW - 400 * 86_400_000;
      for (let i = 0; i < 5; i += 1) {
        await storage.billing.settle({
          freeAllowanceTokens: 0,
          usage: { ...usageFor(uniqueId('req'), ids), createdAt: old + i },
          price: charge(10n),
        });
      }
      const recent = usageFor(uniqueId('req'), ids);
      await storage.billing.settle({ freeAllowanceTokens: 0, usage: recent, price: charge(10n) });
      const deleted: number[] = [];
      for (
        let batch = await storage.usage.deleteRecordedBefore(old + 1_000, 2);
        batch > 0;
        batch = await storage.usage.deleteRecordedBefore(old + 1_000, 2)
      ) {
        deleted.push(batch);
      }
      expect(deleted).toEqual([2, 2, 1]);
      expect((await storage.usage.listByAccount(ids.accountId, 10)).map((row) => row.requestId)).toEqual([
        recent.requestId,
      ]);
      const oldDay = Math.floor(old / 86_400_000);
      expect(await storage.usage.dailyTotals(ids.accountId, dayIso(oldDay), dayIso(oldDay))).toMatchObject([
        { requests: 5, costNano: 50n },
      ]);
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });
  });
});
