/**
 * The billing contract's holds after admission, on both backends: expiry, renewal and checkpoints, the sweeper's
 * release or settlement of orphaned holds, and slices of output.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { billingContractFixture, DAY, NOW, uniqueId } from '../../test/helpers/billing-contract-fixture.js';
import { postgresBackend, sqliteBackend } from '../../test/helpers/storage-backends.js';
import type { HoldCheckpoint, OrphanedHold } from './billing-types.js';
import type { Storage } from './types.js';
import { planSliceGrant } from '../billing/slice-grant.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

describe.each([sqliteBackend, postgresBackend])(
  'billing contract, holds that grow and the sweeper: $name',
  (backend) => {
    const fixture = billingContractFixture(backend);
    const { fundedAccount, reserveInput, hold, usageFor, checkpointOf, sliceInput } = fixture;
    let storage: Storage;
    beforeAll(() => {
      storage = fixture.storage;
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
      expect((await storage.billing.ledger(ids.accountId, 10)).filter((entry) => entry.kind === 'usage')).toMatchObject(
        [{ requestId: a, amountNano: -700n }],
      );
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

    it('a settlement takes its checkpoint row with it; one without a checkpoint leaves none: no sweep bills again', async () => {
      const ids = await fundedAccount(10_000n);
      const first = await storage.billing.reserve(reserveInput(ids, hold(1_000n), { expiresAt: NOW + 1_000 }));
      const second = await storage.billing.reserve(reserveInput(ids, hold(1_000n), { expiresAt: NOW + 1_000 }));
      const [a, b] = [first, second].map((result) => (result.admitted ? result.reservation.requestId : ''));
      await storage.billing.renewHolds([{ requestId: a!, expiresAt: NOW + 5_000, checkpoint: checkpointOf(40) }]);
      for (const requestId of [a!, b!]) {
        const settled = await storage.billing.settle({
          freeAllowanceTokens: 0,
          usage: usageFor(requestId, ids),
          price: costing(300n),
        });
        expect(settled).toMatchObject({ settled: true, chargedNano: 300n });
      }
      const orphans: OrphanedHold[] = [];
      const swept = await storage.billing.sweepExpiredReservations(NOW + 60_000, (orphan) => {
        orphans.push(orphan);
        return undefined;
      });
      expect(swept).toMatchObject({ released: 0, settled: 0 });
      expect(orphans).toEqual([]);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_400n, reservedNano: 0n });
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
        permissions: {
          scopes: null,
          models: null,
          spendLimit: { limitNano: 500_000n, period: 'day' },
          rateLimit: null,
        },
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
          ...(keyed ? { apiKeyId: limited.id } : {}),
        });
      expect(await grant(bySlice!, withWrites(10, 1_000), false)).toMatchObject({ granted: true });
      expect(await grant(byKeyedSlice!, withWrites(20, 2_000), true)).toMatchObject({
        granted: true,
        limitHoldNano: 100n,
      });
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
      const sweeps = await Promise.all(
        [1, 2, 3].map(() => storage.billing.sweepExpiredReservations(NOW + 1_000, bill)),
      );
      expect(sweeps.reduce((sum, sweep) => sum + sweep.settled, 0)).toBe(5);
      expect(sweeps.reduce((sum, sweep) => sum + sweep.released, 0)).toBe(0);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 95_000n, reservedNano: 0n });
      expect(await storage.usage.listByAccount(ids.accountId, 10)).toHaveLength(5);
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('grows a hold a slice at a time: free tokens first, a partial slice when only that is left, then refusals', async () => {
      const ids = await fundedAccount(5_000n);
      const reserved = await storage.billing.reserve(
        reserveInput(ids, hold(1_000n, 100), { freeAllowanceTokens: 150 }),
      );
      const requestId = reserved.admitted ? reserved.reservation.requestId : '';
      // 50 free tokens are left today: they come first, then 150 tokens at 10 nano.
      expect(
        await storage.billing.grantSlice(
          sliceInput(requestId, ids, 200, { freeAllowanceTokens: 150, checkpoint: checkpointOf(90) }),
        ),
        // SQLite says its checkpoint waits for the periodic batch (`checkpointDeferred`): its hold is in memory.
      ).toMatchObject({ granted: true, tokens: 200, holdNano: 1_500n, freeTokens: 50 });
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

    it('a whole slice (sized by bytes) is granted in full or refused without taking anything', async () => {
      const ids = await fundedAccount(5_000n);
      const reserved = await storage.billing.reserve(
        reserveInput(ids, hold(1_000n, 100), { freeAllowanceTokens: 150 }),
      );
      const requestId = reserved.admitted ? reserved.reservation.requestId : '';
      const whole = (tokens: number) =>
        sliceInput(requestId, ids, tokens, {
          freeAllowanceTokens: 150,
          plan: (state) => planSliceGrant(tokens, 10n, state, true),
        });
      // 50 free tokens and 4,000 nano (400 tokens) left: 451 tokens whole are refused, free tokens untouched…
      expect(await storage.billing.grantSlice(whole(451))).toMatchObject({ granted: false, reason: 'balance' });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        reservedNano: 1_000n,
        freeReservedTokens: 100,
      });
      // …and 450 are granted in full.
      expect(await storage.billing.grantSlice(whole(450))).toEqual({
        granted: true,
        tokens: 450,
        holdNano: 4_000n,
        freeTokens: 50,
      });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        reservedNano: 5_000n,
        freeReservedTokens: 150,
      });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });

    it('a whole slice the balance cannot pay in full takes nothing; asked by the count, the rest is granted', async () => {
      const ids = await fundedAccount(5_000n);
      const reserved = await storage.billing.reserve(reserveInput(ids, hold(1_000n)));
      const requestId = reserved.admitted ? reserved.reservation.requestId : '';
      // 4,000 nano left: 800 tokens at 10 nano are asked whole and refused, then 400 of 800 asked by the count.
      expect(
        await storage.billing.grantSlice(
          sliceInput(requestId, ids, 800, { plan: (state) => planSliceGrant(800, 10n, state, true) }),
        ),
      ).toMatchObject({ granted: false, reason: 'balance', state: { availableNano: 4_000n } });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 1_000n });
      expect(await storage.billing.grantSlice(sliceInput(requestId, ids, 800))).toEqual({
        granted: true,
        tokens: 400,
        holdNano: 4_000n,
        freeTokens: 0,
      });
      await storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(requestId, ids), price: costing(50n) });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 4_950n, reservedNano: 0n });
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
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: 10_000n,
        reservedNano: 10_000n,
      });
      for (const requestId of requestIds)
        await storage.billing.settle({
          freeAllowanceTokens: 0,
          usage: usageFor(requestId, ids),
          price: costing(50n),
        });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 9_500n, reservedNano: 0n });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    });
  },
);
