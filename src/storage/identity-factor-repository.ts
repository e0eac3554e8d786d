import type { Kysely, Selectable } from 'kysely';
import type { Database } from './database-schema.js';
import type {
  IdentityFactorRepository,
  IdentityFactorTables,
  Passkey,
  PasskeysTable,
} from './identity-factor-types.js';

export function createIdentityFactorRepository(base: Kysely<Database>): IdentityFactorRepository {
  const db = base.withTables<IdentityFactorTables>();
  return {
    async saveTotpDraft(accountId, secret, at) {
      const existing = await db
        .selectFrom('totp_factors')
        .select('confirmed_at')
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (existing !== undefined && existing.confirmed_at !== null) return false;
      if (existing !== undefined) {
        await db
          .updateTable('totp_factors')
          .set({ secret, created_at: at, last_step: 0 })
          .where('account_id', '=', accountId)
          .where('confirmed_at', 'is', null)
          .execute();
      } else {
        await db
          .insertInto('totp_factors')
          .values({ account_id: accountId, secret, confirmed_at: null, last_step: 0, created_at: at })
          .execute();
      }
      return true;
    },

    async findTotp(accountId) {
      const row = await db
        .selectFrom('totp_factors')
        .selectAll()
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        accountId: row.account_id,
        secret: row.secret,
        confirmedAt: row.confirmed_at === null ? null : Number(row.confirmed_at),
        lastStep: Number(row.last_step),
        createdAt: Number(row.created_at),
      };
    },

    async acceptTotpStep(accountId, step) {
      const result = await db
        .updateTable('totp_factors')
        .set({ last_step: step })
        .where('account_id', '=', accountId)
        .where('last_step', '<', step)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async confirmTotp(accountId, at) {
      await db.updateTable('totp_factors').set({ confirmed_at: at }).where('account_id', '=', accountId).execute();
    },

    async deleteTotp(accountId) {
      await db.deleteFrom('recovery_codes').where('account_id', '=', accountId).execute();
      const result = await db.deleteFrom('totp_factors').where('account_id', '=', accountId).executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async replaceRecoveryCodes(accountId, codeHashes) {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('recovery_codes').where('account_id', '=', accountId).execute();
        if (codeHashes.length > 0) {
          await trx
            .insertInto('recovery_codes')
            .values(codeHashes.map((code_hash) => ({ code_hash, account_id: accountId, used_at: null })))
            .execute();
        }
      });
    },

    async spendRecoveryCode(accountId, codeHash, at) {
      const result = await db
        .updateTable('recovery_codes')
        .set({ used_at: at })
        .where('code_hash', '=', codeHash)
        .where('account_id', '=', accountId)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async countUnusedRecoveryCodes(accountId) {
      const row = await db
        .selectFrom('recovery_codes')
        .select((eb) => eb.fn.countAll<string | number>().as('count'))
        .where('account_id', '=', accountId)
        .where('used_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async addPasskey(passkey) {
      await db
        .insertInto('passkeys')
        .values({
          id: passkey.id,
          account_id: passkey.accountId,
          public_key: passkey.publicKey,
          counter: passkey.counter,
          transports: passkey.transports.join(','),
          name: passkey.name,
          created_at: passkey.createdAt,
          last_used_at: passkey.lastUsedAt,
        })
        .execute();
    },

    async listPasskeys(accountId) {
      const rows = await db
        .selectFrom('passkeys')
        .selectAll()
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .execute();
      return rows.map(toPasskey);
    },

    async findPasskey(id) {
      const row = await db.selectFrom('passkeys').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? null : toPasskey(row);
    },

    async touchPasskey(id, counter, at) {
      await db.updateTable('passkeys').set({ counter, last_used_at: at }).where('id', '=', id).execute();
    },

    async renamePasskey(accountId, id, name) {
      const result = await db
        .updateTable('passkeys')
        .set({ name })
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async deletePasskey(accountId, id) {
      const result = await db
        .deleteFrom('passkeys')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async deleteAllPasskeys(accountId) {
      const result = await db.deleteFrom('passkeys').where('account_id', '=', accountId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async createChallenge(challenge) {
      await db
        .insertInto('identity_challenges')
        .values({
          id_hash: challenge.idHash,
          kind: challenge.kind,
          account_id: challenge.accountId,
          payload: challenge.payload,
          attempts: 0,
          expires_at: challenge.expiresAt,
        })
        .execute();
    },

    async findChallenge(idHash, kind, at) {
      const row = await db
        .selectFrom('identity_challenges')
        .selectAll()
        .where('id_hash', '=', idHash)
        .where('kind', '=', kind)
        .where('expires_at', '>', at)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        idHash: row.id_hash,
        kind: row.kind,
        accountId: row.account_id,
        payload: row.payload,
        attempts: Number(row.attempts),
        expiresAt: Number(row.expires_at),
      };
    },

    async failChallenge(idHash) {
      await db
        .updateTable('identity_challenges')
        .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
        .where('id_hash', '=', idHash)
        .execute();
      const row = await db
        .selectFrom('identity_challenges')
        .select('attempts')
        .where('id_hash', '=', idHash)
        .executeTakeFirst();
      return row === undefined ? Number.POSITIVE_INFINITY : Number(row.attempts);
    },

    async consumeChallenge(idHash) {
      const result = await db.deleteFrom('identity_challenges').where('id_hash', '=', idHash).executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async deleteExpiredChallenges(at) {
      await db.deleteFrom('identity_challenges').where('expires_at', '<=', at).execute();
    },

    async findSsoAccount(provider, subject) {
      const row = await db
        .selectFrom('sso_identities')
        .select('account_id')
        .where('provider', '=', provider)
        .where('subject', '=', subject)
        .executeTakeFirst();
      return row?.account_id ?? null;
    },

    async linkSso(provider, subject, accountId, at) {
      await db
        .insertInto('sso_identities')
        .values({ provider, subject, account_id: accountId, created_at: at })
        .execute();
    },

    async setRole(accountId, role) {
      await db.updateTable('accounts').set({ role }).where('id', '=', accountId).execute();
    },

    async deleteAllForAccount(accountId) {
      await db.transaction().execute(async (trx) => {
        for (const table of [
          'recovery_codes',
          'totp_factors',
          'passkeys',
          'identity_challenges',
          'sso_identities',
        ] as const) {
          await trx.deleteFrom(table).where('account_id', '=', accountId).execute();
        }
      });
    },
  };
}

function toPasskey(row: Selectable<PasskeysTable>): Passkey {
  return {
    id: row.id,
    accountId: row.account_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: row.transports === '' ? [] : row.transports.split(','),
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}
