import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { Database } from '../database-schema.js';
import { createApiKeyRepository } from '../api-key-repository.js';
import { createKyselyStorage } from '../kysely-storage.js';
import { RefuseNulTextPlugin } from '../refuse-nul-text-plugin.js';
import { runMigrations } from '../migrations/run-migrations.js';
import type { Storage } from '../types.js';
import { ACCOUNT_HELD_SQL_FUNCTION, LIMIT_HELD_SQL_FUNCTION } from '../held-in-memory.js';
import { lockDatabaseFile } from './database-file-lock.js';
import { MemoryHoldBook } from './memory-hold-book.js';
import { SqliteBillingStore } from './sqlite-billing-store.js';
import { GroupCommit } from './sqlite-group-commit.js';
import { createSqliteKeyLookup } from './sqlite-key-lookup.js';
import {
  BACKSTOP_AUTOCHECKPOINT_PAGES,
  JOURNAL_SIZE_LIMIT_BYTES,
  RESTART_AFTER_FRAMES,
  WalCheckpointer,
} from './wal-checkpointer.js';
import { WriteGate } from './write-gate.js';
import { isSqliteUniqueViolation } from './sqlite-errors.js';
import { withStatementCache } from './statement-cache.js';

export const SQLITE_MEMORY = ':memory:';
/** The page cache of the gateway's connection: SQLite's own default (its `cache_size = -2000`). */
const PAGE_CACHE_KIB = 2000;

/**
 * Opens (creating if needed) a SQLite database file, or a private in-memory database for `:memory:`.
 * Does not migrate: call `storage.migrate()`.
 */
export async function openSqliteStorage(
  filename: string,
  onBackgroundError: (error: Error) => void = () => {},
  /** The WAL length at which the checkpoint thread starts it over (wal-checkpointer.ts); tests set a short one. */
  walRestartFrames = RESTART_AFTER_FRAMES,
  /** A gateway's: the file is locked for this process, and a second gateway on it is refused (database-file-lock.ts). */
  owner = false,
): Promise<Storage> {
  const onDisk = filename !== SQLITE_MEMORY && filename !== '';
  if (onDisk) mkdirSync(dirname(filename), { recursive: true });
  const unlock =
    owner && onDisk
      ? await lockDatabaseFile(filename, (error) =>
          onBackgroundError(new Error(`The lock of ${filename} was lost: ${error.message}`, { cause: error })),
        )
      : undefined;
  let database: BetterSqlite3.Database;
  try {
    database = new BetterSqlite3(filename);
  } catch (error) {
    await unlock?.();
    throw error;
  }
  try {
    // WAL lets readers run beside the single writer; NORMAL is durable across application crashes
    // (only an OS crash or power loss may drop the last commits) and avoids an fsync per commit.
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    // Savepoints (one per write of a group commit) keep each page's first version in a statement journal, a
    // temporary file by default: a pwrite per page and savepoint, 40% of the hot path's CPU on the bench. Those
    // journals only serve rollbacks inside a transaction (the WAL alone recovers from a crash): memory is enough.
    database.pragma('temp_store = MEMORY');
    // Another process (a CLI admin command, a second gateway) may hold the write lock briefly.
    database.pragma('busy_timeout = 5000');
    // SQLite ignores REFERENCES unless told otherwise, per connection.
    database.pragma('foreign_keys = ON');
    // SQLite keeps a WAL file at its largest size after a checkpoint unless told to truncate it.
    database.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
    // better-sqlite3 builds SQLite with a 16 MB page cache per connection (SQLITE_DEFAULT_CACHE_SIZE=-16000)
    // where SQLite's own default is 2 MiB. The cache is malloc'd a page at a time as pages are read and never
    // given back, so it grew with the database to most of the gateway's heap outside V8 under load (glibc's
    // main arena 4 -> 15-23 MB). The hot path touches few pages (rows by key, request ids that grow with the
    // clock, so inserts go to the right-hand leaves), and a page it misses is a read from the OS's cache.
    database.pragma(`cache_size = ${-PAGE_CACHE_KIB}`);
  } catch (error) {
    database.close();
    await unlock?.();
    throw error;
  }
  // Live holds, in this process's memory (docs/decisions/0019-sqlite-holds-in-memory.md). SQL that compares a balance
  // or a limit with what is held reads them through these functions, in the same synchronous step as its write; on a
  // CLI's connection the book stays empty.
  const book = new MemoryHoldBook();
  database.function(ACCOUNT_HELD_SQL_FUNCTION, { deterministic: false }, (accountId) =>
    typeof accountId === 'string' ? (book.account(accountId)?.nano ?? 0n) : 0n,
  );
  database.function(LIMIT_HELD_SQL_FUNCTION, { deterministic: false }, (limitId) =>
    typeof limitId === 'string' ? book.limitNano(limitId) : 0n,
  );
  // better-sqlite3 returns INTEGER columns as JS numbers, exact up to 2^53: fine for epoch ms and
  // token counts. Money (nano-USD) is read through text casts instead (money-sql.ts).
  let checkpointer: WalCheckpointer | undefined;
  const noteWrite = () => checkpointer?.noteWrite();
  // The serving connection's commits and the checkpoint thread's WAL restarts take turns through it.
  const gate = new WriteGate();
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(database, noteWrite) }),
    plugins: [new RefuseNulTextPlugin()],
  });
  // Kysely's single connection: taking it waits for whichever transaction holds the handle to close, and keeps the
  // next one out while the group commit's batch runs.
  const whenHandleFree = (work: () => void) => db.connection().execute(async () => work());
  const billingStore = new SqliteBillingStore(
    database,
    new GroupCommit(database, whenHandleFree, noteWrite, gate),
    book,
    whenHandleFree,
  );
  const storage = createKyselyStorage({
    dialect: 'sqlite',
    heldInMemory: book,
    db,
    isUniqueViolation: isSqliteUniqueViolation,
    migrate: async () => {
      const applied = await migrateSqlite(db);
      if (onDisk && checkpointer === undefined) {
        // Checkpoints (and their fsyncs) move to a worker thread, running while there are writes to follow;
        // this connection's own stays as a backstop. Started once the file has its schema.
        database.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
        checkpointer = new WalCheckpointer(filename, onBackgroundError, undefined, gate, walRestartFrames);
      }
      return applied;
    },
    billingStore,
    findKeyWithOrganisation: createSqliteKeyLookup(
      database,
      createApiKeyRepository(db, 'sqlite').findByHashWithOrganisation,
    ),
  });
  const closeStorage = storage.close;
  let closing: Promise<void> | undefined;
  // The billing store's queued writes go in first, then the last checkpoint, before the handle closes.
  storage.close = () =>
    (closing ??= (async () => {
      await billingStore.close();
      await checkpointer?.stop();
      await closeStorage();
      await unlock?.();
    })());
  return storage;
}

/**
 * Kysely's SQLite adapter takes no lock and runs migrations outside a transaction. Wrapping the whole
 * run in BEGIN IMMEDIATE takes the database's write lock first, so processes migrating one file at
 * once run one after the other (the later ones wait up to busy_timeout, then find nothing pending),
 * and a failed migration rolls back completely (SQLite's DDL is transactional).
 * Holding the Kysely connection also keeps this process's other queries out of the transaction.
 * Two handles in the *same* process cannot wait for each other this way (better-sqlite3 waits
 * synchronously, blocking the event loop); the gateway opens one handle per process.
 */
async function migrateSqlite(db: Kysely<Database>): Promise<string[]> {
  return db.connection().execute(async (connection) => {
    await sql`begin immediate`.execute(connection);
    let applied: string[];
    try {
      applied = await runMigrations(connection);
    } catch (error) {
      await sql`rollback`.execute(connection);
      throw error;
    }
    await sql`commit`.execute(connection);
    return applied;
  });
}
