/** The billing contract's key spend limits (docs/architecture.md#key-scopes-and-limits), on both backends. */
import { beforeAll, describe, expect, it } from 'vitest';
import { billingContractFixture, DAY, holdUpTo, NOW, uniqueId } from '../../test/helpers/billing-contract-fixture.js';
import { postgresBackend, sqliteBackend } from '../../test/helpers/storage-backends.js';
import type { AdmissionState, OrphanedHold } from './billing-types.js';
import type { Storage } from './types.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

describe.each([sqliteBackend, postgresBackend])('billing contract, key spend limits: $name', (backend) => {
  const fixture = billingContractFixture(backend);
  const { fundedAccount, reserveInput, usageFor, checkpointOf, sliceInput } = fixture;
  let storage: Storage;
  beforeAll(() => {
    storage = fixture.storage;
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

    it('the planner sees the lower of the balance and the key remaining limit, and the hold counts against the key', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      let seen: AdmissionState | undefined;
      const result = await storage.billing.reserve(
        reserveInput(
          ids,
          (state) => {
            seen = state;
            return holdUpTo(2_000n)(state);
          },
          {},
        ),
      );
      expect(seen).toMatchObject({
        availableNano: 5_000n,
        spendLimit: { limitNano: 5_000n, spentNano: 0n, reservedNano: 0n, remainingNano: 5_000n, binding: true },
      });
      expect(result).toMatchObject({ admitted: true, reservation: { holdNano: 2_000n, limitHoldNano: 2_000n } });
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
          {},
        ),
      );
      expect(second).toMatchObject({ availableNano: 3_500n, spendLimit: { spentNano: 1_500n, remainingNano: 3_500n } });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it("usage past the key's hold is charged up to its limit, the rest unbilled; the key never spends past it", async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const results = await Promise.all(
        Array.from({ length: 4 }, () => storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}))),
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
      const result = await storage.billing.reserve(reserveInput(ids, holdUpTo(4_000n), {}));
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
        Array.from({ length: 60 }, () => storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}))),
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

    it('concurrent admissions admit nothing beyond the limit, and a changed period is read under the lock', async () => {
      const ids = await limitedKey(1_000_000n, 20_000n);
      const results = await Promise.all(
        Array.from({ length: 60 }, () => storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}))),
      );
      expect(results.filter((result) => result.admitted)).toHaveLength(20);
      expect(results.every((result) => !result.admitted || result.reservation.limitHoldNano === 1_000n)).toBe(true);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 20_000n });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 20_000n });
      // The limit moved to another period: the holds in flight count against the new one, read under the lock.
      await storage.apiKeys.update(
        ids.accountId,
        ids.keyId,
        { spendLimit: { limitNano: 20_000n, period: 'month' } },
        NOW,
      );
      const after = await storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}));
      expect(after).toMatchObject({ admitted: false, state: { spendLimit: { period: 'month', remainingNano: 0n } } });
    });

    it('a new UTC day restarts a daily limit; a settlement of the previous day does not count against the new one', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const first = await storage.billing.reserve(reserveInput(ids, holdUpTo(4_000n), {}));
      if (!first.admitted) throw new Error('not admitted');
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(first.reservation.requestId, ids),
        price: costing(4_000n),
      });
      const refused = await storage.billing.reserve(reserveInput(ids, holdUpTo(2_000n), {}));
      expect(refused).toMatchObject({
        admitted: false,
        state: { spendLimit: { remainingNano: 1_000n, binding: true } },
      });
      // A request of day N still running when day N+1 starts, and a new one of day N+1.
      const late = await storage.billing.reserve(reserveInput(ids, holdUpTo(500n), {}));
      const tomorrow = NOW + 86_400_000;
      const next = await storage.billing.reserve(
        reserveInput(ids, holdUpTo(4_000n), { day: DAY + 1, createdAt: tomorrow }),
      );
      expect(next).toMatchObject({ admitted: true });
      if (!late.admitted) throw new Error('not admitted');
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: usageFor(late.reservation.requestId, ids),
        price: costing(300n),
      });
      // What the new day's admissions see (a refused one writes nothing): the late settlement counted against day N.
      const seen = await storage.billing.reserve(
        reserveInput(ids, holdUpTo(5_000n), { day: DAY + 1, createdAt: tomorrow }),
      );
      expect(seen).toMatchObject({
        admitted: false,
        state: { spendLimit: { spentNano: 0n, reservedNano: 4_000n, remainingNano: 1_000n } },
      });
    });

    it('the sweeper releases the key hold of an abandoned request', async () => {
      const ids = await limitedKey(100_000n, 5_000n, 'total');
      await storage.billing.reserve(reserveInput(ids, holdUpTo(3_000n), { expiresAt: NOW + 10 }));
      expect((await keyOf(ids)).spend.reservedNano).toBe(3_000n);
      await storage.billing.releaseExpiredReservations(NOW + 1_000);
      expect((await keyOf(ids)).spend).toEqual({ periodStart: 0, usedNano: 0n, reservedNano: 0n });
    });

    it('slices grow the key hold within its remaining limit: a partial slice, then a key_spend_limit refusal (growing holds)', async () => {
      const ids = await limitedKey(100_000n, 5_000n);
      const reserved = await storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}));
      if (!reserved.admitted) throw new Error('not admitted');
      const requestId = reserved.reservation.requestId;
      const slice = (tokens: number) => storage.billing.grantSlice(sliceInput(requestId, ids, tokens, { at: NOW }));
      // A whole slice the key can pay (PostgreSQL: the one-statement path)...
      expect(await slice(200)).toEqual({
        granted: true,
        tokens: 200,
        holdNano: 2_000n,
        freeTokens: 0,
        limitHoldNano: 2_000n,
      });
      expect((await keyOf(ids)).spend).toEqual({ periodStart: DAY, usedNano: 0n, reservedNano: 3_000n });
      // ...then the 2,000 nano the key has left of its 5,000, though the account has 97,000 more: 200 of 400 tokens.
      expect(await slice(400)).toEqual({
        granted: true,
        tokens: 200,
        holdNano: 2_000n,
        freeTokens: 0,
        limitHoldNano: 2_000n,
      });
      expect(await slice(400)).toMatchObject({
        granted: false,
        reason: 'spend_limit',
        state: { availableNano: 0n, spendLimit: { remainingNano: 0n, binding: true } },
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
        const reserved = await storage.billing.reserve(reserveInput(ids, holdUpTo(100n), {}));
        if (reserved.admitted) requestIds.push(reserved.reservation.requestId);
      }
      // 19,000 nano left on the key (the account has 999,000): 60 slices of 1,000 nano each ask for 60,000.
      const grants = await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          storage.billing.grantSlice(sliceInput(requestIds[index % 10]!, ids, 100, { at: NOW })),
        ),
      );
      const granted = grants.reduce((sum, grant) => sum + (grant.granted ? grant.holdNano : 0n), 0n);
      expect(granted).toBe(19_000n);
      expect(
        grants.filter((grant) => !grant.granted).every((grant) => !grant.granted && grant.reason === 'spend_limit'),
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
      const checkpointed = await storage.billing.reserve(reserveInput(ids, holdUpTo(2_000n), { expiresAt: NOW + 10 }));
      const bare = await storage.billing.reserve(reserveInput(ids, holdUpTo(3_000n), { expiresAt: NOW + 10 }));
      if (!checkpointed.admitted || !bare.admitted) throw new Error('not admitted');
      expect(
        await storage.billing.grantSlice(
          sliceInput(checkpointed.reservation.requestId, ids, 100, {
            at: NOW,
            expiresAt: NOW + 20,
            checkpoint: checkpointOf(60),
          }),
        ),
      ).toMatchObject({ granted: true, limitHoldNano: 1_000n });
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
      const result = await storage.billing.reserve(reserveInput(ids, holdUpTo(3_000n)));
      if (!result.admitted) throw new Error('not admitted');
      expect(result.reservation.limitHoldNano).toBe(0n);
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
      const refused = await storage.billing.reserve(reserveInput(ids, holdUpTo(1_000n), {}));
      expect(refused).toMatchObject({
        admitted: false,
        state: { spendLimit: { spentNano: 2_500n, remainingNano: 500n } },
      });
    });
  });
});
