/**
 * The billing contract's spend limits per period at the organisation, project and key levels
 * (docs/billing.md#spend-limits), on both backends: concurrent admissions and slices never pass a limit (on
 * PostgreSQL also from two storage handles, as two instances), periods roll over by the request's clock, settlement
 * and the sweeper release exactly what was held.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProjectService } from '../accounts/project-service.js';
import {
  DAY,
  fundedAccountIn,
  holdUpTo,
  NOW,
  plainUsage,
  type AccountIds,
  reserveInput as fixtureReserveInput,
  uniqueId,
} from '../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import { planSliceGrant } from '../billing/slice-grant.js';
import type { ReserveInput } from './billing-types.js';
import type { SpendPeriod } from './key-permission-types.js';
import type { LimitScope } from './spend-limit-types.js';
import type { Storage } from './types.js';

const MS_PER_DAY = 86_400_000;
/** NOW is Friday 2024-10-04 UTC: the next week starts on Monday 2024-10-07, the next month on 2024-11-01. */
const NEXT_MONDAY = (DAY + 3) * MS_PER_DAY;
const NEXT_MONTH = Date.UTC(2024, 10, 1);

describe.each([sqliteBackend, postgresBackend])('billing contract, spend limits: $name', (backend) => {
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

  function reserveInput(ids: AccountIds, want: bigint, overrides: Partial<ReserveInput> = {}): ReserveInput {
    return fixtureReserveInput(ids, holdUpTo(want), overrides);
  }

  /** A funded organisation with a key in a project of its own: the three scopes' ids. */
  async function organisationWithProjectKey(nano: bigint) {
    const ids = await fundedAccountIn(storage, nano);
    const project = await new ProjectService(storage.projects, () => NOW).create(ids.accountId, uniqueId('p'), null);
    const key = await storage.apiKeys.create({
      id: uniqueId('key'),
      accountId: ids.accountId,
      name: 'in project',
      keyHash: uniqueId('h'),
      hint: 'h',
      createdAt: NOW,
      expiresAt: null,
      projectId: project.id,
    });
    const scopeIds: Record<LimitScope, string> = { organisation: ids.accountId, project: project.id, key: key.id };
    return { ids: { accountId: ids.accountId, keyId: key.id }, scopeIds };
  }

  const setLimit = (ids: AccountIds, scope: LimitScope, scopeId: string, period: SpendPeriod, limitNano: bigint) =>
    storage.spendLimits.set({ organisationId: ids.accountId, scope, scopeId, period, limitNano, at: NOW });

  const limitsOf = async (ids: AccountIds, at = NOW) =>
    (await storage.spendLimits.list(ids.accountId, at)).map((limit) => ({
      scope: limit.scope,
      period: limit.period,
      usedNano: limit.usedNano,
      reservedNano: limit.reservedNano,
    }));

  const settle = (requestId: string, ids: AccountIds, nano: bigint, createdAt = NOW) =>
    storage.billing.settle({
      usage: plainUsage(requestId, ids, createdAt),
      price: costing(nano),
      freeAllowanceTokens: 0,
    });

  it.each([
    ['organisation', 'day'],
    ['project', 'week'],
    ['key', 'month'],
  ] as const)(
    'concurrent admissions never pass a %s limit per %s; settlements never spend past it',
    async (scope, period) => {
      const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
      await setLimit(ids, scope, scopeIds[scope], period, 20_000n);
      const results = await Promise.all(
        Array.from({ length: 60 }, () => storage.billing.reserve(reserveInput(ids, 1_000n))),
      );
      const admitted = results.flatMap((result) => (result.admitted ? [result.reservation] : []));
      expect(admitted).toHaveLength(20);
      const refused = results.find((result) => !result.admitted);
      expect(refused).toMatchObject({ state: { spendLimit: { scope, period, remainingNano: 0n, binding: true } } });
      expect(await limitsOf(ids)).toEqual([{ scope, period, usedNano: 0n, reservedNano: 20_000n }]);
      // Each charged more than it held: the limit caps the charges, what is left is unbilled.
      const settled = await Promise.all(admitted.map((reservation) => settle(reservation.requestId, ids, 1_500n)));
      const charged = settled.reduce((sum, result) => sum + (result.settled ? result.chargedNano : 0n), 0n);
      expect(charged).toBe(20_000n);
      expect(await limitsOf(ids)).toEqual([{ scope, period, usedNano: 20_000n, reservedNano: 0n }]);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: 1_000_000n - 20_000n,
        reservedNano: 0n,
      });
      expect(await storage.billing.verifyLedger()).toEqual([]);
    },
  );

  it.runIf(backend.name === 'postgres')(
    'two storage handles on one database (two instances) never pass an organisation limit together',
    async () => {
      const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
      await setLimit(ids, 'organisation', scopeIds.organisation, 'week', 25_000n);
      const other = await database.open();
      try {
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, index) =>
            (index % 2 === 0 ? storage : other).billing.reserve(reserveInput(ids, 1_000n)),
          ),
        );
        expect(results.filter((result) => result.admitted)).toHaveLength(25);
        expect(await limitsOf(ids)).toEqual([
          { scope: 'organisation', period: 'week', usedNano: 0n, reservedNano: 25_000n },
        ]);
      } finally {
        await other.close();
      }
    },
  );

  it('growing slices stop at the tightest limit, and a refusal names it', async () => {
    const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
    await setLimit(ids, 'organisation', scopeIds.organisation, 'day', 6_000n);
    await setLimit(ids, 'key', scopeIds.key, 'month', 3_500n);
    const reserved = await storage.billing.reserve(reserveInput(ids, 1_000n));
    if (!reserved.admitted) throw new Error('not admitted');
    const slice = (tokens: number) =>
      storage.billing.grantSlice({
        requestId: reserved.reservation.requestId,
        accountId: ids.accountId,
        apiKeyId: ids.keyId,
        day: DAY,
        at: NOW,
        freeAllowanceTokens: 0,
        tokens,
        outputPriceNano: 10n,
        plan: (state) => planSliceGrant(tokens, 10n, state),
        expiresAt: NOW + 60_000,
      });
    // Slices of 1,000: two whole, then the 500 the key's limit has left, then a refusal naming the key's limit.
    const grants = await Promise.all([slice(100), slice(100), slice(100)]);
    expect(grants.map((grant) => (grant.granted ? grant.holdNano : 0n)).sort()).toEqual([1_000n, 1_000n, 500n]);
    expect(await slice(100)).toMatchObject({
      granted: false,
      reason: 'spend_limit',
      state: { spendLimit: { scope: 'key', period: 'month' } },
    });
    expect(await limitsOf(ids)).toEqual([
      { scope: 'key', period: 'month', usedNano: 0n, reservedNano: 3_500n },
      { scope: 'organisation', period: 'day', usedNano: 0n, reservedNano: 3_500n },
    ]);
    // The key's limit cleared: the organisation's is the tightest now.
    await storage.spendLimits.clear(
      { organisationId: ids.accountId, scope: 'key', scopeId: scopeIds.key, period: 'month' },
      NOW,
    );
    expect(await slice(300)).toMatchObject({ granted: true, holdNano: 2_500n });
    expect(await slice(100)).toMatchObject({ state: { spendLimit: { scope: 'organisation', period: 'day' } } });
    expect(await settle(reserved.reservation.requestId, ids, 5_000n)).toMatchObject({ chargedNano: 5_000n });
    expect(await limitsOf(ids)).toEqual([{ scope: 'organisation', period: 'day', usedNano: 5_000n, reservedNano: 0n }]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 0n });
  });

  it('a week restarts on Monday and a month on the 1st (UTC), by the request clock', async () => {
    const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
    await setLimit(ids, 'project', scopeIds.project, 'week', 5_000n);
    await setLimit(ids, 'organisation', scopeIds.organisation, 'month', 8_000n);
    const first = await storage.billing.reserve(reserveInput(ids, 4_000n));
    if (!first.admitted) throw new Error('not admitted');
    await settle(first.reservation.requestId, ids, 4_000n);
    expect(await storage.billing.reserve(reserveInput(ids, 2_000n))).toMatchObject({
      admitted: false,
      state: { spendLimit: { scope: 'project', period: 'week', remainingNano: 1_000n } },
    });
    // Sunday 23:59 is the same week; Monday 00:00 a new one, where the month's 4,000 spent still count.
    const sunday = NEXT_MONDAY - 60_000;
    expect(await storage.billing.reserve(reserveInput(ids, 2_000n, { createdAt: sunday }))).toMatchObject({
      admitted: false,
    });
    const monday = await storage.billing.reserve(reserveInput(ids, 4_500n, { createdAt: NEXT_MONDAY, day: DAY + 3 }));
    expect(monday).toMatchObject({ admitted: false, state: { spendLimit: { scope: 'organisation' } } });
    const fits = await storage.billing.reserve(reserveInput(ids, 4_000n, { createdAt: NEXT_MONDAY, day: DAY + 3 }));
    if (!fits.admitted) throw new Error('not admitted');
    await settle(fits.reservation.requestId, ids, 4_000n, NEXT_MONDAY);
    expect(await limitsOf(ids, NEXT_MONDAY)).toEqual([
      { scope: 'organisation', period: 'month', usedNano: 8_000n, reservedNano: 0n },
      { scope: 'project', period: 'week', usedNano: 4_000n, reservedNano: 0n },
    ]);
    // November: the month's counter restarts.
    const november = await storage.billing.reserve(
      reserveInput(ids, 5_000n, { createdAt: NEXT_MONTH, day: NEXT_MONTH / MS_PER_DAY }),
    );
    expect(november).toMatchObject({ admitted: true });
    expect(await limitsOf(ids, NEXT_MONTH)).toEqual([
      { scope: 'organisation', period: 'month', usedNano: 0n, reservedNano: 5_000n },
      { scope: 'project', period: 'week', usedNano: 0n, reservedNano: 5_000n },
    ]);
  });

  it('settlement releases exactly what the hold took, whatever the limits became meanwhile', async () => {
    const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
    await setLimit(ids, 'organisation', scopeIds.organisation, 'day', 10_000n);
    await setLimit(ids, 'project', scopeIds.project, 'day', 10_000n);
    const reserved = await storage.billing.reserve(reserveInput(ids, 4_000n));
    if (!reserved.admitted) throw new Error('not admitted');
    expect(reserved.reservation.limitHoldNano).toBe(4_000n);
    // Raised, cleared and added while the request runs.
    await setLimit(ids, 'organisation', scopeIds.organisation, 'day', 20_000n);
    await storage.spendLimits.clear(
      { organisationId: ids.accountId, scope: 'project', scopeId: scopeIds.project, period: 'day' },
      NOW,
    );
    await setLimit(ids, 'key', scopeIds.key, 'total', 2_500n);
    // The key's new limit caps the charge; the organisation's hold goes back whole.
    expect(await settle(reserved.reservation.requestId, ids, 3_000n)).toMatchObject({
      chargedNano: 2_500n,
      unbilledNano: 500n,
    });
    expect(await limitsOf(ids)).toEqual([
      { scope: 'key', period: 'total', usedNano: 2_500n, reservedNano: 0n },
      { scope: 'organisation', period: 'day', usedNano: 2_500n, reservedNano: 0n },
    ]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 0n });
  });

  it("the sweeper releases an abandoned hold's limits, or bills them at its checkpoint", async () => {
    const { ids, scopeIds } = await organisationWithProjectKey(1_000_000n);
    await setLimit(ids, 'project', scopeIds.project, 'month', 50_000n);
    const abandoned = await storage.billing.reserve(reserveInput(ids, 3_000n, { expiresAt: NOW + 10 }));
    const checkpointed = await storage.billing.reserve(reserveInput(ids, 5_000n, { expiresAt: NOW + 10 }));
    if (!abandoned.admitted || !checkpointed.admitted) throw new Error('not admitted');
    const swept = await storage.billing.sweepExpiredReservations(NOW + 1_000, (hold) =>
      hold.requestId === checkpointed.reservation.requestId
        ? { usage: plainUsage(hold.requestId, ids), price: costing(1_200n), freeAllowanceTokens: 0 }
        : undefined,
    );
    expect(swept).toMatchObject({ released: 1, settled: 1 });
    expect(await limitsOf(ids)).toEqual([{ scope: 'project', period: 'month', usedNano: 1_200n, reservedNano: 0n }]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 998_800n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });
});
