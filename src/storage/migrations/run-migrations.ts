import { Migrator, type Kysely, type Migration } from 'kysely';
import { allMigrations } from './all-migrations.js';

/** Our own names, so Tollgate's bookkeeping cannot collide with another Kysely app sharing the database. */
export const MIGRATION_TABLE = 'tollgate_migrations';
export const MIGRATION_LOCK_TABLE = 'tollgate_migrations_lock';

export interface RunMigrationsOptions {
  /**
   * Schema holding the migration tables (PostgreSQL). Must be given on PostgreSQL: without it Kysely
   * checks "does the migration table exist?" across every schema of the database, so a migrated
   * schema next door would make it skip creating ours and then fail.
   */
  migrationTableSchema?: string;
  /** The migrations to apply when not all of them: a test building the schema an older release left. */
  migrations?: Record<string, Migration>;
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Applies pending migrations and returns the names applied, in order; throws on the first failure.
 *
 * Concurrency is the caller's dialect's business: on PostgreSQL Kysely's adapter holds a session
 * advisory lock around a transaction that re-reads the applied list, so several processes may call
 * this at once (the first applies, the others find nothing pending). On SQLite Kysely takes no lock;
 * open-sqlite-storage.ts wraps this call in `BEGIN IMMEDIATE` to get the same guarantee.
 */
export async function runMigrations<Schema>(db: Kysely<Schema>, options: RunMigrationsOptions = {}): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...(options.migrations ?? allMigrations) }) },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    // Migrations are written independent of each other (e.g. 0003-dashboard and 0004-usage-rollup touch
    // different tables), so a database that got a later one first still takes an earlier one added afterwards.
    allowUnorderedMigrations: true,
    // Code-unit order, the order the names are written in. Kysely's default, localeCompare, is ICU collation:
    // its first call maps ~2.4 MB of ICU data from the node binary, held by the gateway for its whole life.
    nameComparator: compareCodeUnits,
    ...(options.migrationTableSchema === undefined ? {} : { migrationTableSchema: options.migrationTableSchema }),
  });
  // migrateToLatest never throws: it reports the failure in `error` beside per-migration results.
  let { error, results = [] } = await migrator.migrateToLatest();
  for (let retry = 0; retry < 3 && error !== undefined && lostRaceWithDroppedObject(error, results); retry++)
    ({ error, results = [] } = await migrator.migrateToLatest());
  if (error !== undefined) {
    const failed = results.find((result) => result.status === 'Error')?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(failed ? `Migration ${failed} failed: ${reason}` : `Migrating failed: ${reason}`, { cause: error });
  }
  return results
    .filter((result) => result.status === 'Success' && result.direction === 'Up')
    .map((result) => result.migrationName);
}

/**
 * Before migrating, Kysely lists the tables and columns of every schema of the PostgreSQL database; a schema, table or
 * column that another session drops or renames meanwhile (another app's migration, a test's schema next door) fails
 * that listing with "… does not exist" (3F000 schema, 42P01 table, 42703 column) though nothing of ours is wrong. Such a
 * failure comes before any migration ran, so trying again is safe.
 */
const DROPPED_MEANWHILE = new Set(['3F000', '42P01', '42703']);

function lostRaceWithDroppedObject(error: unknown, results: ReadonlyArray<{ status: string }>): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' && DROPPED_MEANWHILE.has(code) && !results.some((result) => result.status === 'Error')
  );
}
