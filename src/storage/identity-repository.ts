import type { Kysely } from 'kysely';
import {
  ACCOUNTS_EMAIL_UNIQUE,
  normalizeEmail,
  type Database,
  type UniqueViolationDetector,
} from './database-schema.js';
import type { AccountTokenPurpose, IdentityRepository } from './identity-types.js';
import { writeTransaction } from './transactions.js';
import { DuplicateEmailError, type Storage } from './types.js';

/** What no scrypt hash can ever equal: `verifyPassword` refuses anything not of its six-part form. */
const NO_PASSWORD = '!deleted';

export function createIdentityRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  isUniqueViolation: UniqueViolationDetector,
): IdentityRepository {
  return {
    async createToken(token) {
      await db
        .insertInto('account_tokens')
        .values({
          id_hash: token.idHash,
          purpose: token.purpose,
          account_id: token.accountId,
          email: token.email,
          created_at: token.createdAt,
          expires_at: token.expiresAt,
          used_at: null,
        })
        .execute();
    },

    async findToken(idHash) {
      const row = await db.selectFrom('account_tokens').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
      if (row === undefined) return null;
      return {
        idHash: row.id_hash,
        purpose: parsePurpose(row.purpose),
        accountId: row.account_id,
        email: row.email,
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
        usedAt: row.used_at === null ? null : Number(row.used_at),
      };
    },

    async consumeToken(idHash, at) {
      const result = await db
        .updateTable('account_tokens')
        .set({ used_at: at })
        .where('id_hash', '=', idHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', at)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async revokeTokens(accountId, purpose, at) {
      await db
        .updateTable('account_tokens')
        .set({ used_at: at })
        .where('account_id', '=', accountId)
        .where('purpose', '=', purpose)
        .where('used_at', 'is', null)
        .execute();
    },

    async emailStatus(accountId) {
      const row = await db
        .selectFrom('accounts')
        .select(['email_verified_at', 'deleted_at'])
        .where('id', '=', accountId)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        emailVerifiedAt: row.email_verified_at === null ? null : Number(row.email_verified_at),
        deletedAt: row.deleted_at === null ? null : Number(row.deleted_at),
      };
    },

    async setEmailVerified(accountId, at) {
      await db.updateTable('accounts').set({ email_verified_at: at }).where('id', '=', accountId).execute();
    },

    async changeEmail(accountId, email, at) {
      try {
        await db
          .updateTable('accounts')
          .set({ email, email_normalized: normalizeEmail(email), email_verified_at: at })
          .where('id', '=', accountId)
          .execute();
      } catch (error) {
        if (isUniqueViolation(error, ACCOUNTS_EMAIL_UNIQUE)) throw new DuplicateEmailError(email);
        throw error;
      }
    },

    async listSessions(accountId) {
      const rows = await db
        .selectFrom('sessions')
        .select(['id_hash', 'created_at', 'last_seen_at', 'user_agent', 'ip'])
        .where('account_id', '=', accountId)
        .orderBy('last_seen_at', 'desc')
        .execute();
      return rows.map((row) => ({
        idHash: row.id_hash,
        createdAt: Number(row.created_at),
        lastSeenAt: Number(row.last_seen_at),
        userAgent: row.user_agent,
        ip: row.ip,
      }));
    },

    async countOtherActiveAdmins(exceptId) {
      const row = await db
        .selectFrom('accounts')
        .select((eb) => eb.fn.countAll().as('count'))
        .where('role', '=', 'admin')
        .where('disabled', '=', 0)
        .where('deleted_at', 'is', null)
        .where('id', '!=', exceptId)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async deleteAccount(accountId, tombstone, at) {
      await writeTransaction(db, dialect, async (trx) => {
        await trx
          .updateTable('accounts')
          .set({
            email: tombstone,
            email_normalized: normalizeEmail(tombstone),
            password_hash: NO_PASSWORD,
            email_verified_at: null,
            disabled: 1,
            deleted_at: at,
          })
          .where('id', '=', accountId)
          .execute();
        await trx.deleteFrom('sessions').where('account_id', '=', accountId).execute();
        await trx
          .updateTable('account_tokens')
          .set({ used_at: at })
          .where('account_id', '=', accountId)
          .where('used_at', 'is', null)
          .execute();
        await trx
          .updateTable('api_keys')
          .set({ revoked_at: at })
          .where('account_id', '=', accountId)
          .where('revoked_at', 'is', null)
          .execute();
      });
    },
  };
}

function parsePurpose(value: string): AccountTokenPurpose {
  if (value === 'verify_email' || value === 'reset_password') return value;
  throw new Error(`Unknown account token purpose in storage: ${JSON.stringify(value)}`);
}
