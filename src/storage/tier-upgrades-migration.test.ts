/**
 * Migration 0008-tier-upgrades on a database that already has accounts and a ledger: the operator's tier is kept
 * (as the granted tier), every ledger row and index survives the kind CHECK's replacement (a table rebuild on
 * SQLite), the new `tier` kind is accepted and an unknown kind is still refused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, sql, SqliteDialect } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrateOnly } from '../../test/helpers/migration-databases.js';
import { dropPostgresSchema, POSTGRES_URL } from '../../test/helpers/storage-backends.js';
import { allMigrations } from './migrations/all-migrations.js';

interface RawDatabase {
  db: Kysely<unknown>;
  schema: string | undefined;
  drop(): Promise<void>;
}

async function sqliteDatabase(): Promise<RawDatabase> {
  const directory = await mkdtemp(join(tmpdir(), 'tollgate-0008-'));
  const db = new Kysely<unknown>({
    dialect: new SqliteDialect({ database: new BetterSqlite3(join(directory, 'db.sqlite')) }),
  });
  return {
    db,
    schema: undefined,
    drop: async () => (await db.destroy(), await rm(directory, { recursive: true, force: true })),
  };
}

async function postgresDatabase(): Promise<RawDatabase> {
  const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`create schema ${schema}`).finally(() => client.end());
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 2 }),
    }),
  });
  return { db, schema, drop: async () => (await db.destroy(), await dropPostgresSchema(schema)) };
}

const ledgerRow = (id: string, kind: string, key: string) =>
  sql`insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key, request_id, note, created_at)
      values (${id}, 'acct_1', ${kind}, 5000000000, 5000000000, ${key}, null, 'before', 1)`;

describe.each([
  { name: 'sqlite', create: sqliteDatabase },
  { name: 'postgres', create: postgresDatabase },
])('migration 0008-tier-upgrades: $name', ({ create }) => {
  it('keeps accounts, ledger rows and indexes, and accepts the tier kind', async () => {
    const { db, schema, drop } = await create();
    try {
      await migrateOnly(db, schema, ['0001-initial', '0002-billing', '0003-dashboard', '0004-usage-rollup']);
      await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, disabled, created_at)
                values ('acct_1', 'a@example.com', 'a@example.com', 'x', 'user', 'enterprise', 0, 1)`.execute(db);
      await ledgerRow('le_1', 'redemption', 'redeem:1').execute(db);

      expect(await migrateOnly(db, schema, Object.keys(allMigrations))).toContain('0008-tier-upgrades');

      // On the personal organisation since 0016-organisation-wallets.
      const account = await sql<{
        tier: string;
        granted_tier: string;
        bought_tier: string | null;
      }>`select tier, granted_tier, bought_tier from organisations`.execute(db);
      expect(account.rows).toEqual([{ tier: 'enterprise', granted_tier: 'enterprise', bought_tier: null }]);
      const rows = await sql<{ id: string; note: string }>`select id, note from ledger_entries`.execute(db);
      expect(rows.rows).toEqual([{ id: 'le_1', note: 'before' }]);
      await ledgerRow('le_2', 'tier', 'tier:1').execute(db);
      // The unique idempotency index survived the rebuild.
      await expect(ledgerRow('le_3', 'tier', 'tier:1').execute(db)).rejects.toThrow();
      // The CHECK still refuses what is not a kind.
      await expect(ledgerRow('le_4', 'gift', 'gift:1').execute(db)).rejects.toThrow();
      expect(
        (await sql<{ n: string }>`select cast(count(*) as text) as n from ledger_entries`.execute(db)).rows[0]!.n,
      ).toBe('2');
    } finally {
      await drop();
    }
  });
});
