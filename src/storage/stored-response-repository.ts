import type { Kysely } from 'kysely';
import type { Database } from './database-schema.js';
import type { StoredResponseRecord, StoredResponseRepository } from './stored-response-types.js';

export function createStoredResponseRepository(db: Kysely<Database>): StoredResponseRepository {
  return {
    async put(record) {
      await db
        .insertInto('stored_responses')
        .values({
          id: record.id,
          account_id: record.accountId,
          created_at: record.createdAt,
          response: record.response,
          input_items: record.inputItems,
        })
        .execute();
    },

    async get(accountId, id, notBefore): Promise<StoredResponseRecord | null> {
      // By id and owner together: another account's id is indistinguishable from an unknown one.
      const row = await db
        .selectFrom('stored_responses')
        .selectAll()
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .where('created_at', '>=', notBefore)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        id: row.id,
        accountId: row.account_id,
        createdAt: Number(row.created_at),
        response: row.response,
        inputItems: row.input_items,
      };
    },

    async delete(accountId, id) {
      const result = await db
        .deleteFrom('stored_responses')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    async deleteRecordedBefore(cutoff, limit) {
      if (!Number.isSafeInteger(limit) || limit <= 0) return 0;
      const batch = db.selectFrom('stored_responses').select('id').where('created_at', '<', cutoff).limit(limit);
      const result = await db.deleteFrom('stored_responses').where('id', 'in', batch).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
