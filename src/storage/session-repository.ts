import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { ACCOUNT_COLUMNS, toAccountRecord } from './account-repository.js';
import type { Database } from './database-schema.js';
import { parseOrganisationRole, toSignInPolicy } from './organisation-repository.js';
import {
  SIGN_IN_METHODS,
  type LoginFailureRepository,
  type SessionRepository,
  type SessionWithAccount,
  type SignInMethod,
} from './session-types.js';

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
          organisation_id: session.organisationId ?? null,
          sign_in_method: session.signInMethod ?? null,
          sso_provider: session.ssoProvider ?? null,
        })
        .execute();
    },

    async findWithAccount(idHash): Promise<SessionWithAccount | null> {
      // Every membership of the person, the session's own organisation first, then the oldest: one row answers.
      const row = await db
        .selectFrom('sessions')
        .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
        .leftJoin('organisation_members', 'organisation_members.account_id', 'sessions.account_id')
        .leftJoin('organisations', 'organisations.id', 'organisation_members.organisation_id')
        // The personal organisation (the account's own id) carries the tier the account record shows.
        .leftJoin('organisations as personal', 'personal.id', 'sessions.account_id')
        .select(ACCOUNT_COLUMNS.map((column) => `accounts.${column}` as const))
        .select('personal.tier as tier')
        .select([
          'sessions.id_hash',
          'sessions.account_id',
          'sessions.created_at as session_created_at',
          'sessions.last_seen_at',
          'sessions.organisation_id as session_organisation_id',
          'sessions.sign_in_method',
          'sessions.sso_provider',
          'organisations.require_second_factor',
          'organisations.required_sso_providers',
          'organisation_members.role as member_role',
          'organisation_members.created_at as joined_at',
          'organisations.id as organisation_id',
          'organisations.name as organisation_name',
          'organisations.billing_name',
          'organisations.billing_address',
          'organisations.created_at as organisation_created_at',
        ])
        .where('sessions.id_hash', '=', idHash)
        .orderBy(sql`case when organisation_members.organisation_id = sessions.organisation_id then 0 else 1 end`)
        .orderBy('organisation_members.created_at')
        .orderBy('organisation_members.organisation_id')
        .limit(1)
        .executeTakeFirst();
      if (row === undefined) return null;
      const membership =
        row.organisation_id === null ||
        row.organisation_name === null ||
        row.member_role === null ||
        row.joined_at === null ||
        row.organisation_created_at === null
          ? null
          : {
              organisation: {
                id: row.organisation_id,
                name: row.organisation_name,
                billingName: row.billing_name,
                billingAddress: row.billing_address,
                createdAt: row.organisation_created_at,
                signInPolicy: toSignInPolicy(row.require_second_factor, row.required_sso_providers),
              },
              role: parseOrganisationRole(row.member_role),
              joinedAt: row.joined_at,
            };
      return {
        session: {
          idHash: row.id_hash,
          accountId: row.account_id,
          createdAt: row.session_created_at,
          lastSeenAt: row.last_seen_at,
          organisationId: row.session_organisation_id,
          signInMethod: parseSignInMethod(row.sign_in_method),
          ssoProvider: row.sso_provider,
        },
        account: toAccountRecord(row),
        membership,
      };
    },

    async setSignInMethod(idHash, method) {
      await db.updateTable('sessions').set({ sign_in_method: method }).where('id_hash', '=', idHash).execute();
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

/** Sessions from before 0023 recorded no method: they count as a password alone. */
function parseSignInMethod(value: string | null): SignInMethod {
  return (SIGN_IN_METHODS as readonly (string | null)[]).includes(value) ? (value as SignInMethod) : 'password';
}
