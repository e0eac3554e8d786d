/**
 * Migration 0021-spend-limits on both backends, over data the schema before it wrote: a key's one spend limit (its
 * counters and a hold in flight against it) moves into spend_limits, the hold keeps counting against it, and
 * settling that request after the upgrade releases exactly what it held.
 */
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { databaseBefore, rawPostgresDatabase, rawSqliteDatabase } from '../../test/helpers/migration-databases.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { openStorage } from './open-storage.js';

const DAY = 20_000;
const AT = DAY * 86_400_000;

/** A personal organisation, a key with a daily limit of 5,000 nano (1,000 spent, 700 held) and the hold itself. */
async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, created_at)
            values ('o1', 'a@x', 'a@x', 'x', 'user', ${AT})`.execute(db);
  await sql`insert into organisations (id, name, created_at, balance_nano, reserved_nano)
            values ('o1', 'Personal', ${AT}, 1000000, 700)`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at, spend_limit_nano, spend_period,
              spend_period_start, spend_used_nano, spend_reserved_nano)
            values ('k1', 'o1', 'n', 'h1', 'h', ${AT}, 5000, 'day', ${DAY}, 1000, 700)`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at)
            values ('k2', 'o1', 'unlimited', 'h2', 'h', ${AT})`.execute(db);
  await sql`insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day,
              max_output_tokens, created_at, expires_at, key_hold_nano)
            values ('r_held', 'o1', 'k1', 700, 0, ${DAY}, 100, ${AT}, ${AT + 600_000}, 700)`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0021-spend-limits: $name', ({ create }) => {
  it("moves a key's limit, its counters and its holds in flight into spend_limits", async () => {
    const database = await databaseBefore(create, '0021-spend-limits', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        expect(await storage.migrate()).toContain('0021-spend-limits');
        expect(await storage.spendLimits.list('o1', AT + 1)).toEqual([
          expect.objectContaining({
            scope: 'key',
            scopeId: 'k1',
            period: 'day',
            limitNano: 5_000n,
            usedNano: 1_000n,
            reservedNano: 700n,
          }),
        ]);
        const key = (await storage.apiKeys.findById('o1', 'k1'))!;
        expect(key.permissions.spendLimit).toEqual({ limitNano: 5_000n, period: 'day' });
        expect(key.spend).toEqual({ periodStart: DAY, usedNano: 1_000n, reservedNano: 700n });
        expect((await storage.apiKeys.findById('o1', 'k2'))!.limits).toEqual([]);
        expect((await storage.apiKeys.findByHashWithOrganisation('h1'))!.key.limits).toHaveLength(1);

        // The request held before the upgrade settles after it: its 700 go back, its 400 count as spent.
        const settled = await storage.billing.settle({
          usage: {
            requestId: 'r_held',
            accountId: 'o1',
            apiKeyId: 'k1',
            model: 'alpha-sonnet-5',
            family: 'alpha',
            inputTokens: 10,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            cacheWrite1hTokens: 0,
            outputTokens: 10,
            reasoningTokens: 0,
            status: 'ok',
            stream: false,
            latencyMs: 5,
            createdAt: AT,
            rawUsage: null,
            costNano: 0n,
            freeTokens: 0,
            unbilledNano: 0n,
          },
          price: costing(400n),
          freeAllowanceTokens: 0,
        });
        expect(settled).toMatchObject({ settled: true, chargedNano: 400n });
        expect(await storage.spendLimits.list('o1', AT + 1)).toEqual([
          expect.objectContaining({ usedNano: 1_400n, reservedNano: 0n }),
        ]);
        expect(await storage.billing.balance('o1')).toMatchObject({ balanceNano: 999_600n, reservedNano: 0n });
        expect(await storage.billing.ledger('o1', 5)).toMatchObject([{ kind: 'usage', amountNano: -400n }]);
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
