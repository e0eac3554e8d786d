/** The billing contract's usage summaries and daily rollup, on both backends. */
import { beforeAll, describe, expect, it } from 'vitest';
import { billingContractFixture, DAY, NOW, uniqueId } from '../../test/helpers/billing-contract-fixture.js';
import { postgresBackend, sqliteBackend } from '../../test/helpers/storage-backends.js';
import type { Storage, UsageRecord } from './types.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

describe.each([sqliteBackend, postgresBackend])(
  'billing contract, summaries and the daily rollup: $name',
  (backend) => {
    const fixture = billingContractFixture(backend);
    const { fundedAccount, usageFor } = fixture;
    let storage: Storage;
    beforeAll(() => {
      storage = fixture.storage;
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
            storage.billing.settle({
              freeAllowanceTokens: 0,
              usage: usageFor(uniqueId('req'), ids),
              price: charge(big),
            }),
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
  },
);
