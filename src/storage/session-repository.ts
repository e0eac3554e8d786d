import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ACCOUNT_COLUMNS, toAccountRecord } from './account-repository.js';
import type { Database } from './database-schema.js';
import type { LoginFailureRepository, SessionRepository, SessionWithAccount } from './session-types.js';

export function createSessionRepository(db: Kysely<Database>): SessionRepository {
  return {
    async create(session) {
      await db
        .insertInto('sessions')
        .values({
          id_hash: session.idHash,
          account_id: session.accountId,
          created_at: session.createdAt,
          last_seen_at: session.lastSeenAt,
          user_agent: session.userAgent ?? null,
          ip: session.ip ?? null,
        })
        .execute();
    },

    async findWithAccount(idHash): Promise<SessionWithAccount | null> {
      const row = await db
        .selectFrom('sessions')
        .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
        .select(ACCOUNT_COLUMNS.map((column) => `accounts.${column}` as const))
        .select([
          'sessions.id_hash',
          'sessions.account_id',
          'sessions.created_at as session_created_at',
          'sessions.last_seen_at',
        ])
        .where('sessions.id_hash', '=', idHash)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        session: {
          idHash: row.id_hash,
          accountId: row.account_id,
          createdAt: row.session_created_at,
          lastSeenAt: row.last_seen_at,
        },
        account: toAccountRecord(row),
      };
    },

    async touch(idHash, at) {
      await db.updateTable('sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
    },

    async delete(idHash) {
      await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
    },

    async deleteByAccount(accountId, keepIdHash) {
      let query = db.deleteFrom('sessions').where('account_id', '=', accountId);
      if (keepIdHash !== undefined) query = query.where('id_hash', '!=', keepIdHash);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async deleteExpired(idleBefore, createdBefore) {
      const result = await db
        .deleteFrom('sessions')
        .where((eb) => eb.or([eb('last_seen_at', '<', idleBefore), eb('created_at', '<', createdBefore)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export function createLoginFailureRepository(db: Kysely<Database>): LoginFailureRepository {
  return {
    async record(subjects, at) {
      const rows = subjects.map((subject) => ({ id: randomUUID(), subject, failed_at: at }));
      if (rows.length > 0) await db.insertInto('login_failures').values(rows).execute();
      return rows.map((row) => row.id);
    },

    async recent(subject, since, limit) {
      const rows = await db
        .selectFrom('login_failures')
        .select(['id', 'failed_at'])
        .where('subject', '=', subject)
        .where('failed_at', '>=', since)
        .orderBy('failed_at', 'desc')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ id: row.id, failedAt: Number(row.failed_at) }));
    },

    async deleteIds(ids) {
      if (ids.length === 0) return;
      await db
        .deleteFrom('login_failures')
        .where('id', 'in', [...ids])
        .execute();
    },

    async clear(subject) {
      await db.deleteFrom('login_failures').where('subject', '=', subject).execute();
    },

    async prune(before) {
      const result = await db.deleteFrom('login_failures').where('failed_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
