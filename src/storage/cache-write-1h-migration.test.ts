/**
 * Migration 0009-cache-write-1h on both backends, over data the schema before it wrote: usage rows, their daily
 * rollup and a hold's checkpoint read 0 one-hour writes (every write then was priced as a 5-minute one), and rows
 * settled after it add their 1-hour writes to the same rollup row.
 */
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { databaseBefore, rawPostgresDatabase, rawSqliteDatabase } from '../../test/helpers/migration-databases.js';
import type { HoldCheckpoint } from './billing-types.js';
import { openStorage } from './open-storage.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

const DAY = 20_000;
const AT = DAY * 86_400_000;

/** An account, a key, a settled request (its usage row and rollup) and a checkpointed hold, as 0008's schema holds them. */
async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, created_at, balance_nano)
            values ('a1', 'a@x', 'a@x', 'x', 'user', 'standard', ${AT}, 1000000000)`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at)
            values ('k1', 'a1', 'n', 'h', 'h', ${AT})`.execute(db);
  await sql`insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens,
              cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms,
              created_at, raw_usage, cost_nano)
            values ('r_old', 'a1', 'k1', 'alpha-sonnet-5', 'alpha', 500, 10000, 3000, 300, 0, 'ok', 0, 3, ${AT + 1},
              null, 20250000)`.execute(db);
  await sql`insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
              cache_write_tokens, output_tokens, reasoning_tokens, cost_nano)
            values ('a1', ${DAY}, 'alpha-sonnet-5', 'k1', 1, 500, 10000, 3000, 300, 0, 20250000)`.execute(db);
  await sql`insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day,
              max_output_tokens, created_at, expires_at, model, family, stream, checkpoint_input_tokens,
              checkpoint_cache_read_tokens, checkpoint_cache_write_tokens, checkpoint_output_tokens, checkpoint_at)
            values ('r_held', 'a1', 'k1', 1000, 0, ${DAY}, 100, ${AT}, ${AT + 10}, 'alpha-sonnet-5', 'alpha', 1, 50,
              0, 700, 40, ${AT + 5})`.execute(db);
  await sql`update accounts set reserved_nano = 1000 where id = 'a1'`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0009-cache-write-1h: $name', ({ create }) => {
  it('reads 0 one-hour writes on rows written before it, and adds new ones to the same rollup', async () => {
    const database = await databaseBefore(create, '0009-cache-write-1h', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        expect(await storage.migrate()).toContain('0009-cache-write-1h');
        expect(await storage.usage.listByAccount('a1', 10)).toMatchObject([
          { requestId: 'r_old', cacheWriteTokens: 3_000, cacheWrite1hTokens: 0, costNano: 20_250_000n },
        ]);
        const day = new Date(AT).toISOString().slice(0, 10);
        expect(await storage.usage.dailyTotals('a1', day, day)).toMatchObject([
          { requests: 1, cacheWriteTokens: 3_000, cacheWrite1hTokens: 0 },
        ]);

        const checkpoints: (HoldCheckpoint | null)[] = [];
        await storage.billing.sweepExpiredReservations(AT + 1_000, (orphan) => {
          checkpoints.push(orphan.checkpoint);
          return undefined;
        });
        expect(checkpoints).toEqual([
          {
            model: 'alpha-sonnet-5',
            family: 'alpha',
            stream: true,
            inputTokens: 50,
            cacheReadTokens: 0,
            cacheWriteTokens: 700,
            cacheWrite1hTokens: 0,
            outputTokens: 40,
            at: AT + 5,
          },
        ]);

        await storage.billing.settle({
          freeAllowanceTokens: 0,
          usage: {
            requestId: 'r_new',
            accountId: 'a1',
            apiKeyId: 'k1',
            model: 'alpha-sonnet-5',
            family: 'alpha',
            inputTokens: 500,
            cacheReadTokens: 10_000,
            cacheWriteTokens: 3_000,
            cacheWrite1hTokens: 1_000,
            outputTokens: 300,
            reasoningTokens: 0,
            status: 'ok',
            stream: false,
            latencyMs: 4,
            createdAt: AT + 2,
            rawUsage: null,
            costNano: 0n,
            freeTokens: 0,
            unbilledNano: 0n,
          },
          price: costing(22_500_000n),
        });
        expect(await storage.usage.dailyTotals('a1', day, day)).toMatchObject([
          { requests: 2, cacheWriteTokens: 6_000, cacheWrite1hTokens: 1_000, costNano: 42_750_000n },
        ]);
        expect(await storage.usage.findByRequestIds('a1', ['r_new'])).toMatchObject([{ cacheWrite1hTokens: 1_000 }]);
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
