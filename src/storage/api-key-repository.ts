import type { Kysely, Selectable } from 'kysely';
import { toAccountRecord } from './account-repository.js';
import type { ApiKeysTable, Database } from './database-schema.js';
import type { ApiKeyRecord, ApiKeyRepository, ApiKeyWithAccount, NewApiKey } from './types.js';

/**
 * "Active" here means not revoked. Expiry is not checked: it depends on the caller's clock and is the
 * authentication step's decision, and an expired key can still be revoked or rotated by its owner.
 */
export function createApiKeyRepository(db: Kysely<Database>): ApiKeyRepository {
  return {
    async create(key: NewApiKey): Promise<ApiKeyRecord> {
      const row = toApiKeyRow(key);
      await db.insertInto('api_keys').values(row).execute();
      return toApiKeyRecord(row);
    },

    async findByHashWithAccount(keyHash: string): Promise<ApiKeyWithAccount | null> {
      // The request path's lookup where no hot path serves it (sqlite-hot-path.ts, postgres-hot-path.ts): one join.
      const row = await db
        .selectFrom('api_keys')
        .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
        .selectAll('api_keys')
        .select([
          'accounts.email as account_email',
          'accounts.password_hash as account_password_hash',
          'accounts.role as account_role',
          'accounts.tier as account_tier',
          'accounts.disabled as account_disabled',
          'accounts.created_at as account_created_at',
        ])
        .where('api_keys.key_hash', '=', keyHash)
        .executeTakeFirst();
      return row ? toApiKeyWithAccount(row) : null;
    },

    async findById(accountId: string, id: string): Promise<ApiKeyRecord | null> {
      const row = await db
        .selectFrom('api_keys')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      return row ? toApiKeyRecord(row) : null;
    },

    async listByAccount(accountId: string): Promise<ApiKeyRecord[]> {
      const rows = await db
        .selectFrom('api_keys')
        .selectAll()
        .where('account_id', '=', accountId)
        // The id breaks ties between keys created in the same millisecond, so the order is stable.
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute();
      return rows.map(toApiKeyRecord);
    },

    async revoke(accountId: string, id: string, at: number): Promise<boolean> {
      return revokeActiveKey(db, accountId, id, at);
    },

    async rotate(accountId: string, oldId: string, replacement: NewApiKey, at: number): Promise<ApiKeyRecord | null> {
      if (replacement.accountId !== accountId) {
        throw new Error('A rotated key must be replaced by a key of the same account.');
      }
      return db.transaction().execute(async (transaction) => {
        // The conditional update is the check: under concurrent rotations of one key, only one
        // transaction sees it still active (pg re-checks the row after waiting for its lock,
        // SQLite serialises writers), so a key is never replaced twice.
        if (!(await revokeActiveKey(transaction, accountId, oldId, at))) return null;
        const row = toApiKeyRow(replacement);
        await transaction.insertInto('api_keys').values(row).execute();
        return toApiKeyRecord(row);
      });
    },

    async touchLastUsed(id: string, at: number): Promise<void> {
      await db
        .updateTable('api_keys')
        .set({ last_used_at: at })
        .where('id', '=', id)
        // Concurrent requests may finish out of order; never move the timestamp backwards.
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
        .execute();
    },
  };
}

async function revokeActiveKey(db: Kysely<Database>, accountId: string, id: string, at: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

function toApiKeyRow(key: NewApiKey): Selectable<ApiKeysTable> {
  return {
    id: key.id,
    account_id: key.accountId,
    name: key.name,
    key_hash: key.keyHash,
    hint: key.hint,
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    revoked_at: null,
    last_used_at: null,
  };
}

export function toApiKeyRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

/** A key row joined with its account's profile columns, prefixed `account_` (every key lookup selects these). */
export type KeyWithAccountRow = Selectable<ApiKeysTable> & {
  account_email: string;
  account_password_hash: string;
  account_role: string;
  account_tier: string;
  account_disabled: number;
  account_created_at: number;
};

export function toApiKeyWithAccount(row: KeyWithAccountRow): ApiKeyWithAccount {
  return {
    key: toApiKeyRecord(row),
    account: toAccountRecord({
      id: row.account_id,
      email: row.account_email,
      password_hash: row.account_password_hash,
      role: row.account_role,
      tier: row.account_tier,
      disabled: row.account_disabled,
      created_at: row.account_created_at,
    }),
  };
}
