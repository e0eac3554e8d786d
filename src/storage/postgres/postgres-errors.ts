import type { UniqueIndexTarget } from '../database-schema.js';

/** SQLSTATE unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * pg raises a DatabaseError with SQLSTATE 23505 and, in `constraint`, the name of the violated index.
 * Duck-typed rather than `instanceof pg.DatabaseError`, which breaks when two copies of pg are installed.
 */
export function isPostgresUniqueViolation(error: unknown, target: UniqueIndexTarget): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === UNIQUE_VIOLATION && constraint === target.indexName;
}
