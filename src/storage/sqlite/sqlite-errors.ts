import type { UniqueIndexTarget } from '../database-schema.js';

/**
 * better-sqlite3 reports a unique violation as a SqliteError with code `SQLITE_CONSTRAINT_UNIQUE`
 * (a primary-key clash is `SQLITE_CONSTRAINT_PRIMARYKEY`) and names the columns, not the index:
 * "UNIQUE constraint failed: accounts.email_normalized".
 */
export function isSqliteUniqueViolation(error: unknown, target: UniqueIndexTarget): boolean {
  if (!(error instanceof Error) || !('code' in error) || error.code !== 'SQLITE_CONSTRAINT_UNIQUE') return false;
  const failed = error.message.replace(/^UNIQUE constraint failed: /, '').split(', ');
  const expected = target.columns.map((column) => `${target.table}.${column}`);
  return failed.length === expected.length && expected.every((column) => failed.includes(column));
}
