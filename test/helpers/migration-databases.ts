/**
 * Databases for migration tests: an empty SQLite file or PostgreSQL schema, migrated only as far as a test says, so
 * rows can be written in an older schema before the migration under test runs.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import { expect } from 'vitest';
import pg from 'pg';
import { allMigrations } from '../../src/storage/migrations/all-migrations.js';
import { runMigrations } from '../../src/storage/migrations/run-migrations.js';
import { dropPostgresSchema, POSTGRES_URL } from './storage-backends.js';

export interface RawDatabase {
  /** A new connection each call; the caller destroys it. */
  kysely(): Kysely<unknown>;
  /** What `openStorage` takes, with `options`, to open the same database. */
  url: string;
  options: { postgresSchema?: string };
  schema: string | undefined;
  drop(): Promise<void>;
}

export async function rawSqliteDatabase(): Promise<RawDatabase> {
  const directory = await mkdtemp(join(tmpdir(), 'tollgate-migration-'));
  const file = join(directory, 'db.sqlite');
  return {
    kysely: () => new Kysely({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) }),
    url: `sqlite:${file}`,
    options: {},
    schema: undefined,
    drop: () => rm(directory, { recursive: true, force: true }),
  };
}

export async function rawPostgresDatabase(): Promise<RawDatabase> {
  const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`create schema ${schema}`).finally(() => client.end());
  return {
    kysely: () =>
      new Kysely({
        dialect: new PostgresDialect({
          pool: new pg.Pool({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 2 }),
        }),
      }),
    url: POSTGRES_URL,
    options: { postgresSchema: schema },
    schema,
    drop: () => dropPostgresSchema(schema),
  };
}

/** Applies exactly the named migrations (in name order, any not yet applied); returns the names it applied. */
export function migrateOnly(db: Kysely<unknown>, schema: string | undefined, names: string[]): Promise<string[]> {
  const migrations: Record<string, Migration> = Object.fromEntries(names.map((name) => [name, allMigrations[name]!]));
  return runMigrations(db, { migrations, ...(schema === undefined ? {} : { migrationTableSchema: schema }) });
}

/** Every migration before `first`, in name order: the schema a migration test writes its old rows in. */
export function migrationsBefore(first: string): string[] {
  return Object.keys(allMigrations).filter((name) => name < first);
}

/**
 * A new database in the schema just before migration `first`, holding the rows `writeOldRows` wrote in it: what an
 * operator's database looks like when the release that brings `first` starts. The caller opens storage over it and
 * drops it; it is dropped here when it cannot be made.
 */
export async function databaseBefore(
  create: () => Promise<RawDatabase>,
  first: string,
  writeOldRows: (db: Kysely<unknown>) => Promise<void>,
): Promise<RawDatabase> {
  const database = await create();
  try {
    const db = database.kysely();
    try {
      const before = migrationsBefore(first);
      expect(await migrateOnly(db, database.schema, before)).toEqual(before);
      await writeOldRows(db);
    } finally {
      await db.destroy();
    }
    return database;
  } catch (error) {
    await database.drop();
    throw error;
  }
}
