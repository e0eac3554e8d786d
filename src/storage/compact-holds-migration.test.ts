/**
 * Migration 0009-compact-holds (SQLite): `reservations` rebuilt as one b-tree (WITHOUT ROWID, no `expires_at`
 * index). Holds in flight survive it column for column, the request id still refuses a second hold, and the point
 * of it: a hold's commit (the account's row and the hold) writes two WAL frames, not four.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type Migration } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allMigrations } from './migrations/all-migrations.js';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE } from './migrations/run-migrations.js';

let directory: string;
let handle: BetterSqlite3.Database;
let db: Kysely<unknown>;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'tollgate-0009-'));
  handle = new BetterSqlite3(join(directory, 'db.sqlite'));
  handle.pragma('journal_mode = WAL');
  db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: handle }) });
});

afterEach(async () => {
  await db.destroy();
  await rm(directory, { recursive: true, force: true });
});

async function migrate(names: string[]): Promise<string[]> {
  const migrations: Record<string, Migration> = Object.fromEntries(names.map((name) => [name, allMigrations[name]!]));
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) throw error;
  return results.map((result) => result.migrationName);
}

const BEFORE = Object.keys(allMigrations).filter((name) => name < '0009');

const holdRow = (requestId: string) =>
  `insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens, created_at,
     expires_at, model, family, stream, checkpoint_input_tokens, checkpoint_cache_read_tokens, checkpoint_cache_write_tokens,
     checkpoint_output_tokens, checkpoint_at, key_hold_nano)
   values ('${requestId}', 'acct_1', 'key_1', 9223372036854775000, 7, 20000, 512, 1000, 2000, 'beta-5.4', 'beta', 1, 11, 2, 3, 40, 1500, 5)`;

/** WAL frames one transaction writes: the WAL emptied first, then its size in frames after the commit. */
function framesOf(write: () => void): number {
  handle.pragma('wal_checkpoint(TRUNCATE)');
  handle.transaction(write).immediate();
  const [status] = handle.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number }[];
  return status!.log;
}

function holdCommit(requestId: string): void {
  handle.prepare(`update accounts set reserved_nano = reserved_nano + 1 where id = 'acct_1'`).run();
  handle.prepare(holdRow(requestId)).run();
}

describe('migration 0009-compact-holds (SQLite)', () => {
  it('keeps the holds in flight, column for column, and their request id unique', async () => {
    await migrate(BEFORE);
    await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, disabled, created_at)
              values ('acct_1', 'a@example.com', 'a@example.com', 'x', 'user', 'standard', 0, 1)`.execute(db);
    handle.prepare(holdRow('req_1')).run();
    const before = handle.prepare('select * from reservations').safeIntegers(true).all();

    expect(await migrate(Object.keys(allMigrations))).toEqual(['0009-compact-holds']);

    expect(handle.prepare('select * from reservations').safeIntegers(true).all()).toEqual(before);
    expect(() => handle.prepare(holdRow('req_1')).run()).toThrow(/UNIQUE|PRIMARY KEY/);
    expect(() => handle.prepare(holdRow('req_2').replace("'req_2'", 'null')).run()).toThrow(/NOT NULL/);
    // The sweeper's query still finds expired holds (without an index, by reading the table).
    expect(handle.prepare('select request_id from reservations where expires_at < ? limit 10').pluck().all(3000)).toEqual(['req_1']);
  });

  it('makes the table one b-tree, so a hold commit writes two WAL frames instead of four', async () => {
    await migrate(BEFORE);
    await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, disabled, created_at)
              values ('acct_1', 'a@example.com', 'a@example.com', 'x', 'user', 'standard', 0, 1)`.execute(db);
    const btrees = () => handle.prepare(`select name from sqlite_master where tbl_name = 'reservations' order by name`).pluck().all();
    expect(btrees()).toEqual(['reservations', 'reservations_expires_at_idx', 'sqlite_autoindex_reservations_1']);
    expect(framesOf(() => holdCommit('req_1'))).toBe(4);

    await migrate(Object.keys(allMigrations));

    expect(btrees()).toEqual(['reservations']);
    expect(framesOf(() => holdCommit('req_2'))).toBe(2);
    // The settlement's claim of a hold: one frame for the hold, where it was three.
    expect(framesOf(() => handle.prepare(`delete from reservations where request_id = 'req_2'`).run())).toBe(1);
  });
});
