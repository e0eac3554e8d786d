import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Distinct SQL texts the gateway runs are a few dozen; the bound only guards against unbounded dynamic SQL. */
const MAX_CACHED_STATEMENTS = 500;

/**
 * The database as Kysely's SQLite dialect sees it, with prepared statements reused. Kysely prepares every
 * query again on each call, which profiling showed as the largest single CPU cost of a gateway request;
 * better-sqlite3 statements are reusable, and because they run synchronously one can never be in use twice.
 * (Kysely's `stream()` iterates a statement lazily; the gateway never streams queries.)
 *
 * `onWrite` is told of every statement that may write, as it is handed out (the WAL checkpoint thread follows
 * writes: wal-checkpointer.ts).
 */
export function withStatementCache(database: BetterSqliteDatabase, onWrite: () => void = () => {}): SqliteDatabase {
  const statements = new Map<string, Statement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      if (statement === undefined) {
        if (statements.size >= MAX_CACHED_STATEMENTS) statements.clear();
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      if (!statement.readonly) onWrite();
      return statement;
    },
  };
}
