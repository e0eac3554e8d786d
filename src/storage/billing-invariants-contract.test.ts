/**
 * The money invariants after every kind of settlement (whole, stream, cut, slice refused, swept, journal replay), on
 * both backends' billing stores: per token kind, free + billed + unbilled = reported (the split the store applied, read
 * back from the usage row it wrote); the balance and what is held never go below zero; a key's period spend never
 * passes its limit; the ledger sums to the balance.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  billingContractFixture,
  DAY,
  NOW,
  uniqueId,
  type AccountIds,
} from '../../test/helpers/billing-contract-fixture.js';
import { postgresBackend, sqliteBackend } from '../../test/helpers/storage-backends.js';
import type { ModelPrices } from '../billing/prices.js';
import { planSliceGrant } from '../billing/slice-grant.js';
import { splitUsage, TOKEN_KINDS, tokensByKind, type UsageSplit } from '../billing/usage-split.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { SettlementPricer, SliceInput } from './billing-types.js';
import type { Storage, UsageRecord } from './types.js';

/** A different price per kind, so a kind priced as another would show in the charge. */
const PRICES: ModelPrices = { input: 2n, cacheRead: 1n, cacheWrite: 3n, cacheWrite1h: 4n, output: 10n };

describe.each([sqliteBackend, postgresBackend])(
  'billing contract, invariants per settlement kind: $name',
  (backend) => {
    const fixture = billingContractFixture(backend);
    const { fundedAccount, reserveInput } = fixture;
    let storage: Storage;
    beforeAll(() => {
      storage = fixture.storage;
    });

    /** An account with `accountNano`, its key limited to `limitNano` a day. */
    async function limitedAccount(accountNano: bigint, limitNano: bigint): Promise<AccountIds & { limitNano: bigint }> {
      const ids = await fundedAccount(accountNano);
      const key = await storage.apiKeys.create({
        id: uniqueId('key'),
        accountId: ids.accountId,
        name: 'limited',
        keyHash: uniqueId('h'),
        hint: 'h',
        createdAt: NOW,
        expiresAt: null,
        permissions: { scopes: null, models: null, spendLimit: { limitNano, period: 'day' }, rateLimit: null },
      });
      return { accountId: ids.accountId, keyId: key.id, limitNano };
    }

    /** The pricer of a reply, recording every split it gives (a store may price more than once: PostgreSQL probes). */
    function recordingPricer(usage: CanonicalUsage): { price: SettlementPricer; splits: UsageSplit[] } {
      const splits: UsageSplit[] = [];
      return {
        splits,
        price: (room) => {
          const split = splitUsage(usage, PRICES, room);
          splits.push(split);
          return split;
        },
      };
    }

    function record(requestId: string, ids: AccountIds, usage: CanonicalUsage, more: Partial<UsageRecord> = {}) {
      return {
        requestId,
        accountId: ids.accountId,
        apiKeyId: ids.keyId,
        model: 'beta-5.4',
        family: 'beta',
        ...usage,
        status: 'ok',
        stream: false,
        latencyMs: 5,
        createdAt: NOW,
        rawUsage: null,
        costNano: 0n,
        freeTokens: 0,
        unbilledNano: 0n,
        ...more,
      } satisfies UsageRecord;
    }

    const usageOf = (input: number, output: number, cacheRead = 0, cacheWrite = 0, write1h = 0): CanonicalUsage => ({
      inputTokens: input,
      cacheReadTokens: cacheRead,
      cacheWriteTokens: cacheWrite,
      cacheWrite1hTokens: write1h,
      outputTokens: output,
      reasoningTokens: 0,
    });

    async function reserve(ids: AccountIds & { limitNano?: bigint }, holdNano: bigint, freeTokens = 0, free = 0) {
      const result = await storage.billing.reserve(
        reserveInput(ids, () => ({ admitted: true, holdNano, freeTokens, maxOutputTokens: 10 }), {
          freeAllowanceTokens: free,
          ...(ids.limitNano === undefined ? {} : { keySpendLimited: true }),
        }),
      );
      if (!result.admitted) throw new Error('refused');
      return result.reservation.requestId;
    }

    const slice = (requestId: string, ids: AccountIds, tokens: number, keyed: boolean): SliceInput => ({
      requestId,
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      day: DAY,
      at: NOW,
      freeAllowanceTokens: 0,
      tokens,
      outputPriceNano: PRICES.output,
      plan: (state) => planSliceGrant(tokens, PRICES.output, state),
      expiresAt: NOW + 60_000,
      ...(keyed ? { keySpendLimited: true } : {}),
    });

    /**
     * The invariants, read back from what the store wrote: the split whose figures are the usage row's is the one it
     * applied, and per kind it covers exactly what was reported; money and limits are where they must be.
     */
    async function expectInvariants(
      ids: AccountIds & { limitNano?: bigint },
      requestId: string,
      usage: CanonicalUsage,
      splits: readonly UsageSplit[],
      overrunTokens = 0,
    ): Promise<UsageSplit> {
      const [row] = await storage.usage.findByRequestIds(ids.accountId, [requestId]);
      if (row === undefined) throw new Error(`no usage row for ${requestId}`);
      const applied = splits.find(
        (split) =>
          split.billedNano === row.costNano &&
          split.freeTokens === row.freeTokens &&
          split.unbilledNano === row.unbilledNano &&
          split.unbilledTokens + overrunTokens === (row.unbilledTokens ?? 0),
      );
      expect(applied, 'the usage row is one of the splits the rule gave').toBeDefined();
      const reported = tokensByKind(usage);
      for (const kind of TOKEN_KINDS) {
        const part = applied!.kinds[kind];
        expect(part.reported, kind).toBe(reported[kind]);
        expect(part.free + part.billed + part.unbilled, kind).toBe(part.reported);
        expect(Math.min(part.free, part.billed, part.unbilled), kind).toBeGreaterThanOrEqual(0);
      }
      const billedCost = TOKEN_KINDS.reduce(
        (sum, kind) =>
          sum +
          BigInt(applied!.kinds[kind].billed) *
            {
              input: PRICES.input,
              cacheRead: PRICES.cacheRead,
              cacheWrite5m: PRICES.cacheWrite,
              cacheWrite1h: PRICES.cacheWrite1h,
              output: PRICES.output,
            }[kind],
        0n,
      );
      expect(billedCost).toBe(row.costNano);
      const balance = await storage.billing.balance(ids.accountId);
      expect(balance!.balanceNano).toBeGreaterThanOrEqual(0n);
      expect(balance!.reservedNano).toBeGreaterThanOrEqual(0n);
      if (ids.limitNano !== undefined) {
        const key = await storage.apiKeys.findById(ids.accountId, ids.keyId);
        expect(key!.spend.usedNano + key!.spend.reservedNano).toBeLessThanOrEqual(ids.limitNano);
        expect(key!.spend.reservedNano).toBeGreaterThanOrEqual(0n);
      }
      expect(await storage.billing.verifyLedger()).toEqual([]);
      return applied!;
    }

    it('whole: a reply settled at once', async () => {
      const ids = await limitedAccount(100_000n, 50_000n);
      const requestId = await reserve(ids, 2_000n);
      const usage = usageOf(300, 120, 200, 60, 20);
      const { price, splits } = recordingPricer(usage);
      const result = await storage.billing.settle({
        usage: record(requestId, ids, usage),
        price,
        freeAllowanceTokens: 0,
      });
      expect(result).toMatchObject({ settled: true, chargedNano: 300n * 2n + 200n + 40n * 3n + 20n * 4n + 120n * 10n });
      await expectInvariants(ids, requestId, usage, splits);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 0n });
    });

    it('whole, with free tokens first: the free allowance, then money, per kind in order', async () => {
      const ids = await fundedAccount(100_000n);
      const requestId = await reserve(ids, 1_000n, 250, 400);
      const usage = usageOf(300, 100);
      const { price, splits } = recordingPricer(usage);
      await storage.billing.settle({
        usage: record(requestId, ids, usage),
        price,
        freeAllowanceTokens: 400,
        heldFreeTokens: 250,
      });
      const applied = await expectInvariants(ids, requestId, usage, splits);
      expect(applied.kinds.input).toMatchObject({ free: 300, billed: 0 });
      expect(applied.kinds.output).toMatchObject({ free: 100, billed: 0 });
    });

    it('stream: a hold grown by slices, then settled', async () => {
      const ids = await limitedAccount(100_000n, 60_000n);
      const requestId = await reserve(ids, 1_000n);
      for (const tokens of [100, 100])
        expect(await storage.billing.grantSlice(slice(requestId, ids, tokens, true))).toMatchObject({ granted: true });
      const usage = usageOf(200, 290);
      const { price, splits } = recordingPricer(usage);
      await storage.billing.settle({
        usage: record(requestId, ids, usage, { stream: true }),
        price,
        freeAllowanceTokens: 0,
      });
      await expectInvariants(ids, requestId, usage, splits);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 0n });
    });

    it('cut: a stream the client left, settled on what was delivered', async () => {
      const ids = await fundedAccount(100_000n);
      const requestId = await reserve(ids, 1_000n);
      await storage.billing.grantSlice(slice(requestId, ids, 100, false));
      const usage = usageOf(200, 37);
      const { price, splits } = recordingPricer(usage);
      await storage.billing.settle({
        usage: record(requestId, ids, usage, { stream: true, status: 'client_disconnected' }),
        price,
        freeAllowanceTokens: 0,
      });
      await expectInvariants(ids, requestId, usage, splits);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 100_000n - 400n - 370n });
    });

    it("slice refused: the key's limit ends the reply; what the vendor produced after is unbilled, the limit is kept", async () => {
      const ids = await limitedAccount(100_000n, 2_500n);
      const requestId = await reserve(ids, 1_000n);
      expect(await storage.billing.grantSlice(slice(requestId, ids, 100, true))).toMatchObject({
        granted: true,
        tokens: 100,
      });
      expect(await storage.billing.grantSlice(slice(requestId, ids, 100, true))).toMatchObject({
        granted: true,
        tokens: 50,
      });
      expect(await storage.billing.grantSlice(slice(requestId, ids, 100, true))).toMatchObject({
        granted: false,
        reason: 'spend_limit',
      });
      // The vendor reported 30 tokens more than were delivered, and counts the prompt past what the limit leaves.
      const usage = usageOf(600, 150);
      const { price, splits } = recordingPricer(usage);
      const result = await storage.billing.settle({
        usage: record(requestId, ids, usage, { stream: true, status: 'length', unbilledTokens: 30 }),
        price,
        freeAllowanceTokens: 0,
      });
      expect(result).toMatchObject({ settled: true, chargedNano: 2_500n });
      const applied = await expectInvariants(ids, requestId, usage, splits, 30);
      expect(applied.unbilledTokens).toBeGreaterThan(0);
      const key = await storage.apiKeys.findById(ids.accountId, ids.keyId);
      expect(key!.spend).toMatchObject({ usedNano: 2_500n, reservedNano: 0n });
    });

    it('swept: an orphaned hold settled at its checkpoint, within the balance', async () => {
      const ids = await limitedAccount(1_500n, 100_000n);
      const requestId = await reserve(ids, 1_000n);
      await storage.billing.renewHolds([
        {
          requestId,
          expiresAt: NOW + 1_000,
          checkpoint: {
            model: 'beta-5.4',
            family: 'beta',
            stream: true,
            inputTokens: 400,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            cacheWrite1hTokens: 0,
            outputTokens: 90,
            at: NOW + 500,
          },
        },
      ]);
      const recorded: { usage: CanonicalUsage; splits: UsageSplit[] }[] = [];
      const swept = await storage.billing.sweepExpiredReservations(NOW + 120_000, (orphan) => {
        const checkpoint = orphan.checkpoint!;
        const usage = usageOf(checkpoint.inputTokens, checkpoint.outputTokens);
        const pricer = recordingPricer(usage);
        recorded.push({ usage, splits: pricer.splits });
        return {
          usage: record(orphan.requestId, ids, usage, { stream: true, status: 'instance_lost' }),
          price: pricer.price,
          freeAllowanceTokens: 0,
        };
      });
      expect(swept).toMatchObject({ settled: 1, released: 0 });
      const applied = await expectInvariants(ids, requestId, recorded[0]!.usage, recorded[0]!.splits);
      // 800 for the prompt and 70 of the 90 output tokens fit the 1,500 left; 20 are unbilled.
      expect(applied).toMatchObject({ billedNano: 1_500n, unbilledTokens: 20 });
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 0n, reservedNano: 0n });
    });

    it('journal replay: a settlement replayed after it went in changes nothing; one replayed after its hold was swept still bills', async () => {
      const ids = await limitedAccount(10_000n, 8_000n);
      const usage = usageOf(100, 50);
      // Settled, but the gateway never heard (the store went away): the journal replays it.
      const first = await reserve(ids, 1_000n);
      const once = recordingPricer(usage);
      await storage.billing.settle({ usage: record(first, ids, usage), price: once.price, freeAllowanceTokens: 0 });
      const replay = recordingPricer(usage);
      expect(
        await storage.billing.settle({ usage: record(first, ids, usage), price: replay.price, freeAllowanceTokens: 0 }),
      ).toEqual({ settled: false, reason: 'already_settled' });
      await expectInvariants(ids, first, usage, once.splits);
      // Never settled, and its hold released by the sweeper meanwhile (no checkpoint): the replay settles without one.
      const second = await reserve(ids, 1_000n);
      await storage.billing.extendHold(second, NOW + 1);
      expect(await storage.billing.releaseExpiredReservations(NOW + 120_000)).toBeGreaterThanOrEqual(1);
      const late = recordingPricer(usage);
      expect(
        await storage.billing.settle({ usage: record(second, ids, usage), price: late.price, freeAllowanceTokens: 0 }),
      ).toMatchObject({ settled: true, chargedNano: 700n });
      await expectInvariants(ids, second, usage, late.splits);
      expect(await storage.billing.balance(ids.accountId)).toMatchObject({
        balanceNano: 10_000n - 1_400n,
        reservedNano: 0n,
      });
    });
  },
);
