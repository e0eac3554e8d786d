/**
 * Migration 0012-local-input-tokens on both backends, over data the schema before it wrote: an older usage row reads
 * no local count and is no calibration sample; a settlement after it keeps the local count it is given (through each
 * backend's own settlement statement), and the start-up read returns exactly the samples, oldest first, within the
 * latest rows it scans.
 */
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  databaseBefore,
  migrationsBefore,
  rawPostgresDatabase,
  rawSqliteDatabase,
} from '../../test/helpers/migration-databases.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { InputCalibration, seedCalibration } from '../billing/input-calibration.js';
import { allMigrations } from './migrations/all-migrations.js';
import { openStorage } from './open-storage.js';
import type { UsageRecord } from './types.js';

const DAY = 20_000;
const AT = DAY * 86_400_000;
const BEFORE = migrationsBefore('0012-local-input-tokens');

async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, created_at, balance_nano)
            values ('a1', 'a@x', 'a@x', 'x', 'user', 'standard', ${AT}, 1000000000)`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at)
            values ('k1', 'a1', 'n', 'h', 'h', ${AT})`.execute(db);
  await sql`insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens,
              cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms,
              created_at, raw_usage, cost_nano)
            values ('r_old', 'a1', 'k1', 'alpha-sonnet-5', 'alpha', 500, 100, 0, 300, 0, 'ok', 0, 3, ${AT + 1},
              '{"input_tokens":500}', 20250000)`.execute(db);
}

function usage(requestId: string, at: number, extra: Partial<UsageRecord>): UsageRecord {
  return {
    requestId,
    accountId: 'a1',
    apiKeyId: 'k1',
    model: 'alpha-sonnet-5',
    family: 'alpha',
    inputTokens: 1_000,
    cacheReadTokens: 200,
    cacheWriteTokens: 100,
    cacheWrite1hTokens: 0,
    outputTokens: 50,
    reasoningTokens: 0,
    status: 'ok',
    stream: false,
    latencyMs: 4,
    createdAt: at,
    rawUsage: '{"input_tokens":1000}',
    costNano: 0n,
    freeTokens: 0,
    unbilledNano: 0n,
    ...extra,
  };
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0012-local-input-tokens: $name', ({ create }) => {
  it('reads no local count on older rows, keeps the one a settlement gives, and seeds from the latest samples', async () => {
    const database = await databaseBefore(create, '0012-local-input-tokens', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        // 0012 and every migration after it (later work adds theirs).
        expect(await storage.migrate()).toEqual(Object.keys(allMigrations).filter((name) => !BEFORE.includes(name)));
        const [old] = await storage.usage.listByAccount('a1', 10);
        expect(old).toMatchObject({ requestId: 'r_old', inputTokens: 500, costNano: 20_250_000n });
        expect(old!.localInputTokens).toBeUndefined();
        expect(await storage.usage.calibrationSamples(100)).toEqual([]);

        for (const [requestId, at, extra] of [
          ['r_sample_1', AT + 10, { localInputTokens: 1_000 }],
          ['r_plain', AT + 20, {}],
          ['r_sample_2', AT + 30, { localInputTokens: 1_100, model: 'gamma-2.5-pro', family: 'gamma' }],
        ] as const) {
          // Each with a hold, as the gateway settles: PostgreSQL's one-statement settlement needs it.
          const reserved = await storage.billing.reserve({
            requestId,
            accountId: 'a1',
            apiKeyId: 'k1',
            day: DAY,
            freeAllowanceTokens: 0,
            createdAt: at,
            expiresAt: at + 60_000,
            plan: () => ({ admitted: true, holdNano: 5_000n, freeTokens: 0, maxOutputTokens: 100 }),
          });
          expect(reserved.admitted).toBe(true);
          const result = await storage.billing.settle({
            freeAllowanceTokens: 0,
            heldFreeTokens: 0,
            usage: usage(requestId, at, extra),
            price: costing(1_000n),
          });
          expect(result.settled).toBe(true);
        }
        const byId = new Map(
          (await storage.usage.findByRequestIds('a1', ['r_sample_1', 'r_plain', 'r_sample_2'])).map((row) => [
            row.requestId,
            row.localInputTokens,
          ]),
        );
        expect(Object.fromEntries(byId)).toEqual({ r_sample_1: 1_000, r_plain: undefined, r_sample_2: 1_100 });

        // Oldest first; the vendor's prompt is input, cache reads and cache writes.
        expect(await storage.usage.calibrationSamples(100)).toEqual([
          { model: 'alpha-sonnet-5', family: 'alpha', localInputTokens: 1_000, vendorInputTokens: 1_300 },
          { model: 'gamma-2.5-pro', family: 'gamma', localInputTokens: 1_100, vendorInputTokens: 1_300 },
        ]);
        // Only the latest rows are scanned: the two newest hold one sample.
        expect((await storage.usage.calibrationSamples(2)).map((sample) => sample.model)).toEqual(['gamma-2.5-pro']);

        const calibration = new InputCalibration();
        expect(await seedCalibration(storage.usage, calibration)).toBe(2);
        expect(calibration.snapshot().get('alpha-sonnet-5')).toMatchObject({ samples: 1 });
        expect(calibration.snapshot().get('gamma-2.5-pro')).toMatchObject({ samples: 1 });
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
