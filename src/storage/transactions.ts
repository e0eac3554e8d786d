import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './database-schema.js';
import type { Storage } from './types.js';

export type Executor = Kysely<Database> | Transaction<Database>;

/**
 * A write transaction that serialises with every other writer of the same account:
 * - PostgreSQL: an ordinary transaction; the callers lock the wallet row with SELECT … FOR UPDATE.
 * - SQLite: BEGIN IMMEDIATE on Kysely's single connection takes the database write lock up front, so a
 *   transaction that reads a balance and then writes it can never interleave with another writer, in this
 *   process (Kysely's connection mutex) or another (SQLite's lock, waited for up to busy_timeout).
 */
export async function writeTransaction<T>(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  work: (trx: Executor) => Promise<T>,
): Promise<T> {
  if (dialect === 'postgres') return db.transaction().execute(work);
  return db.connection().execute(async (connection) => {
    await sql`begin immediate`.execute(connection);
    try {
      const result = await work(connection);
      await sql`commit`.execute(connection);
      return result;
    } catch (error) {
      // SQLite may already have rolled the transaction back (an I/O error does): the rollback's own failure
      // ("no transaction is active") must not hide the error that says why, which may be an outage.
      await sql`rollback`.execute(connection).catch(() => undefined);
      throw error;
    }
  });
}
