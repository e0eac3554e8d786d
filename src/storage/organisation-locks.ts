import type { Storage } from './types.js';
import type { Executor } from './transactions.js';

/**
 * Serialises writers of one organisation's members inside a `writeTransaction`: PostgreSQL locks the organisation
 * row until the transaction ends (SELECT … FOR UPDATE); SQLite's BEGIN IMMEDIATE already holds the database's
 * write lock. Every member change takes it first, so "is this the last owner?" is answered on rows no one else is
 * changing. False when there is no such organisation.
 */
export async function lockOrganisation(
  trx: Executor,
  dialect: Storage['dialect'],
  organisationId: string,
): Promise<boolean> {
  const row = await trx
    .selectFrom('organisations')
    .select('id')
    .where('id', '=', organisationId)
    .$if(dialect === 'postgres', (query) => query.forUpdate())
    .executeTakeFirst();
  return row !== undefined;
}
