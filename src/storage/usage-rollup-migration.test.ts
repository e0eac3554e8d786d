/**
 * Migration 0004 (daily usage rollup) on both backends: it backfills usage_daily from the usage rows recorded
 * before it, and a database that got 0004 before 0003 still takes 0003 afterwards (helpers add migrations in
 * parallel, so the order they reach a database in is not the order of their names).
 */
import { describe, expect, it } from 'vitest';
import { migrateOnly, rawPostgresDatabase, rawSqliteDatabase } from '../../test/helpers/migration-databases.js';
import { allMigrations } from './migrations/all-migrations.js';
import { openStorage } from './open-storage.js';

const DAY = 20_000;
const AT = DAY * 86_400_000;

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0004-usage-rollup: $name', ({ create }) => {
  it('backfills the rollup from existing usage rows, and 0003 still applies after it', async () => {
    const database = await create();
    try {
      const db = database.kysely();
      try {
        expect(await migrateOnly(db, database.schema, ['0001-initial', '0002-billing'])).toEqual([
          '0001-initial',
          '0002-billing',
        ]);
        await db
          .insertInto('accounts' as never)
          .values({
            id: 'a1',
            email: 'a@x',
            email_normalized: 'a@x',
            password_hash: 'x',
            role: 'user',
            tier: 't',
            created_at: AT,
          } as never)
          .execute();
        await db
          .insertInto('api_keys' as never)
          .values({ id: 'k1', account_id: 'a1', name: 'n', key_hash: 'h', hint: 'h', created_at: AT } as never)
          .execute();
        const usage = (requestId: string, createdAt: number, model: string, cost: string) => ({
          request_id: requestId,
          account_id: 'a1',
          api_key_id: 'k1',
          model,
          family: 'f',
          input_tokens: 10,
          cache_read_tokens: 1,
          cache_write_tokens: 2,
          output_tokens: 5,
          reasoning_tokens: 1,
          status: 'ok',
          stream: 0,
          latency_ms: 3,
          created_at: createdAt,
          raw_usage: null,
          cost_nano: cost,
        });
        await db
          .insertInto('usage_records' as never)
          .values([
            usage('r1', AT + 1, 'm1', '9007199254740993'),
            usage('r2', AT + 86_399_999, 'm1', '7'),
            usage('r3', AT + 5, 'm2', '1'),
            usage('r4', AT + 86_400_000, 'm1', '2'),
          ] as never)
          .execute();
        // 0004 before 0003: as a database would see it if the rollup shipped first.
        expect(await migrateOnly(db, database.schema, ['0001-initial', '0002-billing', '0004-usage-rollup'])).toEqual([
          '0004-usage-rollup',
        ]);
      } finally {
        await db.destroy();
      }

      const storage = await openStorage(database.url, database.options);
      try {
        // 0003 and every migration after 0004 (later issues add theirs).
        expect(await storage.migrate()).toEqual(
          Object.keys(allMigrations).filter(
            (name) => !['0001-initial', '0002-billing', '0004-usage-rollup'].includes(name),
          ),
        );
        const day = (n: number) => new Date(n * 86_400_000).toISOString().slice(0, 10);
        expect(await storage.usage.dailyTotals('a1', day(DAY), day(DAY + 1))).toEqual([
          {
            day: day(DAY),
            model: 'm1',
            apiKeyId: 'k1',
            requests: 2,
            inputTokens: 20,
            outputTokens: 10,
            cacheReadTokens: 2,
            cacheWriteTokens: 4,
            cacheWrite1hTokens: 0,
            reasoningTokens: 2,
            costNano: 9_007_199_254_741_000n,
            unbilledTokens: 0,
            unbilledNano: 0n,
          },
          {
            day: day(DAY),
            model: 'm2',
            apiKeyId: 'k1',
            requests: 1,
            inputTokens: 10,
            outputTokens: 5,
            cacheReadTokens: 1,
            cacheWriteTokens: 2,
            cacheWrite1hTokens: 0,
            reasoningTokens: 1,
            costNano: 1n,
            unbilledTokens: 0,
            unbilledNano: 0n,
          },
          {
            day: day(DAY + 1),
            model: 'm1',
            apiKeyId: 'k1',
            requests: 1,
            inputTokens: 10,
            outputTokens: 5,
            cacheReadTokens: 1,
            cacheWriteTokens: 2,
            cacheWrite1hTokens: 0,
            reasoningTokens: 1,
            costNano: 2n,
            unbilledTokens: 0,
            unbilledNano: 0n,
          },
        ]);
        expect(await storage.usage.totalsByAccount(day(DAY), day(DAY + 1))).toEqual([
          { accountId: 'a1', requests: 4, tokens: 72, costNano: 9_007_199_254_741_003n },
        ]);
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
