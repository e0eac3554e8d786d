/**
 * The reconcile's query on both backends: settlements written by the real settlement path read back per request with
 * their ledger lines, summed per model and day with nothing flagged; a ledger line altered behind the gateway's back,
 * a usage line removed, and a free count past the reported usage are each flagged with the request's id.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { rawPostgresDatabase, rawSqliteDatabase } from '../../test/helpers/migration-databases.js';
import { reconcileLedger } from '../billing/ledger-reconcile.js';
import type { ModelPrices } from '../billing/prices.js';
import { splitUsage } from '../billing/usage-split.js';
import { emptyUsage, type CanonicalUsage } from '../canonical/usage.js';
import { openStorage } from './open-storage.js';
import type { Storage, UsageRecord } from './types.js';

const DAY = 20_000;
const AT = DAY * 86_400_000 + 3_600_000;
const DAY_TEXT = new Date(AT).toISOString().slice(0, 10);
const PRICES: ModelPrices = { input: 3n, output: 15n, cacheRead: 1n, cacheWrite: 4n, cacheWrite1h: 6n };
const pricesOf = (model: string) => (model === 'alpha-sonnet-5' ? PRICES : undefined);

function record(requestId: string, accountId: string, usage: CanonicalUsage, extra: Partial<UsageRecord> = {}) {
  return {
    requestId,
    accountId,
    apiKeyId: 'k1',
    model: 'alpha-sonnet-5',
    family: 'alpha',
    ...usage,
    status: 'ok',
    stream: false,
    latencyMs: 5,
    createdAt: AT,
    rawUsage: null,
    costNano: 0n,
    freeTokens: 0,
    unbilledNano: 0n,
    ...extra,
  } satisfies UsageRecord;
}

async function settle(storage: Storage, usage: UsageRecord, freeAllowanceTokens = 0): Promise<void> {
  const result = await storage.billing.settle({
    usage,
    price: (room) => splitUsage(usage, PRICES, room),
    freeAllowanceTokens,
  });
  expect(result.settled).toBe(true);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('ledger reconcile: $name', ({ create }) => {
  it('adds up settled requests per model and day, and flags the ones that do not add up', async () => {
    const database = await create();
    const storage = await openStorage(database.url, database.options);
    const db = database.kysely();
    try {
      await storage.migrate();
      await sql`insert into accounts (id, email, email_normalized, password_hash, role, created_at)
                values ('a1', 'a@x', 'a@x', 'x', 'user', ${AT})`.execute(db);
      await sql`insert into organisations (id, name, created_at, balance_nano, free_day)
                values ('a1', 'Personal', ${AT}, 0, ${DAY})`.execute(db);
      await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at)
                values ('k1', 'a1', 'n', 'h', 'h', ${AT})`.execute(db);
      await storage.billing.credit({
        accountId: 'a1',
        kind: 'topup',
        amountNano: 100_000n,
        idempotencyKey: 'topup-1',
        note: null,
        at: AT,
      });
      const whole = {
        ...emptyUsage(),
        inputTokens: 1_000,
        cacheReadTokens: 2_000,
        cacheWriteTokens: 300,
        outputTokens: 500,
      };
      // Whole: 3,000 + 2,000 + 1,200 + 7,500 = 13,700 nano.
      await settle(storage, record('r_whole', 'a1', { ...whole, cacheWrite1hTokens: 100 }));
      // Free: 600 of the day's allowance first (all input), the rest billed.
      await settle(storage, record('r_free', 'a1', { ...emptyUsage(), inputTokens: 400, outputTokens: 300 }), 600);
      // Past the balance: what is left buys output up to it, the rest unbilled; 7 tokens past a refused slice.
      await settle(
        storage,
        record('r_cut', 'a1', { ...emptyUsage(), inputTokens: 10_000, outputTokens: 10_000 }, { unbilledTokens: 7 }),
      );
      // A model the catalog no longer prices, free in whole.
      await settle(
        storage,
        {
          ...record('r_gone', 'a1', { ...emptyUsage(), inputTokens: 50, outputTokens: 20 }),
          model: 'retired-model',
        },
        10_000,
      );

      const clean = await reconcileLedger(storage.usage, { from: DAY_TEXT, to: DAY_TEXT }, pricesOf);
      expect(clean.flags).toEqual([]);
      expect(clean.flaggedRequests).toBe(0);
      expect(clean.groups.map((group) => [group.day, group.model, group.requests])).toEqual([
        [DAY_TEXT, 'alpha-sonnet-5', 3],
        [DAY_TEXT, 'retired-model', 1],
      ]);
      const alpha = clean.groups[0]!;
      expect(alpha.reported).toEqual({ input: 11_400, cacheRead: 2_000, cacheWrite: 300, output: 10_800 });
      for (const kind of ['input', 'cacheRead', 'cacheWrite', 'output'] as const)
        expect(alpha.free[kind] + alpha.billed[kind] + alpha.unbilled[kind]).toBe(alpha.reported[kind]);
      expect(alpha.free.input).toBe(400);
      expect(alpha.free.output).toBe(200);
      expect(alpha.chargedNano).toBe(100_000n);
      expect(alpha.ledgerNano).toBe(-100_000n);
      expect(alpha.overrunOutputTokens).toBe(7);
      expect(alpha.unbilled.output).toBeGreaterThan(0);
      expect(clean.groups[1]).toMatchObject({ unpricedRequests: 1, free: { input: 50, output: 20 } });

      // Days outside the range are left out.
      const next = new Date(AT + 86_400_000).toISOString().slice(0, 10);
      expect((await reconcileLedger(storage.usage, { from: next, to: next }, pricesOf)).totals.requests).toBe(0);

      await sql`update ledger_entries set amount_nano = amount_nano - 1 where request_id = 'r_whole'`.execute(db);
      await sql`delete from ledger_entries where request_id = 'r_free'`.execute(db);
      await sql`update usage_records set free_tokens = 100000 where request_id = 'r_gone'`.execute(db);
      const broken = await reconcileLedger(storage.usage, { from: DAY_TEXT, to: DAY_TEXT }, pricesOf);
      expect(broken.flaggedRequests).toBe(3);
      expect(Object.fromEntries(broken.flags.map((flag) => [flag.requestId, flag.reasons]))).toEqual({
        r_whole: ['ledger_amount_mismatch'],
        r_free: ['ledger_line_missing'],
        r_gone: ['parts_exceed_reported'],
      });
    } finally {
      await db.destroy();
      await storage.close();
      await database.drop();
    }
  });
});
