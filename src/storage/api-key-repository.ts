import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import {
  FULL_PERMISSIONS,
  isApiScope,
  spendPeriodFirstDay,
  spendPeriodNumber,
  SPEND_PERIODS,
  type KeyPermissions,
  type SpendPeriod,
} from './key-permission-types.js';
import { fromIntegerBoolean, type ApiKeysTable, type Database } from './database-schema.js';
import { fromMoneyColumn } from './money-sql.js';
import { defaultProjectId } from './project-types.js';
import { splitModels } from './project-repository.js';
import { writeTransaction, type Executor } from './transactions.js';
import type {
  ApiKeyChange,
  ApiKeyRecord,
  ApiKeyRepository,
  ApiKeyWithOrganisation,
  NewApiKey,
  Storage,
} from './types.js';

/**
 * "Active" here means not revoked. Expiry is not checked: it depends on the caller's clock and is the
 * authentication step's decision, and an expired key can still be revoked or rotated by its owner.
 */
export function createApiKeyRepository(db: Kysely<Database>, dialect: Storage['dialect']): ApiKeyRepository {
  return {
    async create(key: NewApiKey): Promise<ApiKeyRecord> {
      const row = toApiKeyRow(key);
      await db.insertInto('api_keys').values(row).execute();
      return toApiKeyRecord(row);
    },

    async findByHashWithOrganisation(keyHash: string): Promise<ApiKeyWithOrganisation | null> {
      // The Kysely join; each database's opener serves the request path with a faster one (sqlite-key-lookup.ts,
      // postgres-key-lookup-batch.ts), SQLite's falling back to this one while a transaction holds the handle.
      const row = await db
        .selectFrom('api_keys')
        .innerJoin('organisations', 'organisations.id', 'api_keys.account_id')
        .leftJoin('projects', 'projects.id', 'api_keys.project_id')
        .selectAll('api_keys')
        .select([
          'organisations.name as organisation_name',
          'organisations.tier as organisation_tier',
          'organisations.disabled as organisation_disabled',
          'projects.models as project_models',
          'projects.archived_at as project_archived_at',
        ])
        .where('api_keys.key_hash', '=', keyHash)
        .executeTakeFirst();
      return row ? toApiKeyWithOrganisation(row) : null;
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
        // The wallet row first: the old key's spend counters are written under it (admission, settlement).
        let lock = transaction.selectFrom('organisations').select('id').where('id', '=', accountId);
        if (dialect === 'postgres') lock = lock.forNoKeyUpdate();
        await lock.executeTakeFirst();
        if (!(await revokeActiveKey(transaction, accountId, oldId, at))) return null;
        // The replacement carries on the old key's spend of the period (rotating never resets a spend limit), and
        // stays in its project unless told otherwise.
        const old = await transaction
          .selectFrom('api_keys')
          .select(['spend_period_start', 'spend_used_nano', 'project_id'])
          .where('id', '=', oldId)
          .executeTakeFirstOrThrow();
        const row = {
          ...toApiKeyRow(replacement),
          spend_period_start: Number(old.spend_period_start),
          spend_used_nano: fromMoneyColumn(old.spend_used_nano).toString(),
          project_id: replacement.projectId ?? old.project_id ?? defaultProjectId(accountId),
        };
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

    async update(accountId: string, id: string, change: ApiKeyChange, at: number): Promise<ApiKeyRecord | null> {
      return writeTransaction(db, dialect, async (trx) => {
        // The wallet row first, as admission and settlement lock it before they write this key's counters.
        let lock = trx.selectFrom('organisations').select('id').where('id', '=', accountId);
        if (dialect === 'postgres') lock = lock.forNoKeyUpdate();
        if ((await lock.executeTakeFirst()) === undefined) return null;
        const values: Updateable<ApiKeysTable> = {};
        if (change.name !== undefined) values.name = change.name;
        if (change.expiresAt !== undefined) values.expires_at = change.expiresAt;
        if (change.scopes !== undefined) values.scopes = joinList(change.scopes);
        if (change.models !== undefined) values.models = joinList(change.models);
        if (change.rateLimit !== undefined) {
          values.rate_limit_rpm = change.rateLimit?.requestsPerMinute ?? null;
          values.rate_limit_tpm = change.rateLimit?.tokensPerMinute ?? null;
        }
        if (change.spendLimit !== undefined) {
          values.spend_limit_nano = change.spendLimit === null ? null : change.spendLimit.limitNano.toString();
          values.spend_period = change.spendLimit?.period ?? null;
          if (change.spendLimit !== null) {
            // The counter restarts from what the key has settled in the current period (the daily rollup has it):
            // a limit set mid-month counts the month's spend so far. Holds in flight stay in spend_reserved_nano.
            values.spend_period_start = spendPeriodNumber(change.spendLimit.period, at);
            values.spend_used_nano = (await settledSpend(trx, accountId, id, change.spendLimit.period, at)).toString();
          }
        }
        if (Object.keys(values).length > 0) {
          const updated = await trx
            .updateTable('api_keys')
            .set(values)
            .where('account_id', '=', accountId)
            .where('id', '=', id)
            .where('revoked_at', 'is', null)
            .executeTakeFirst();
          if (updated.numUpdatedRows === 0n) return null;
        }
        const row = await trx
          .selectFrom('api_keys')
          .selectAll()
          .where('account_id', '=', accountId)
          .where('id', '=', id)
          .where('revoked_at', 'is', null)
          .executeTakeFirst();
        return row === undefined ? null : toApiKeyRecord(row);
      });
    },
  };
}

/** A key's settled spend in the period `at` falls in, from the daily rollup (whole UTC days: periods are whole days). */
async function settledSpend(
  trx: Executor,
  accountId: string,
  keyId: string,
  period: SpendPeriod,
  at: number,
): Promise<bigint> {
  const firstDay = spendPeriodFirstDay(period, at);
  let query = trx
    .selectFrom('usage_daily')
    .select(sql<string>`cast(coalesce(sum(cost_nano), 0) as text)`.as('spent'))
    .where('account_id', '=', accountId)
    .where('api_key_id', '=', keyId);
  if (firstDay !== null) query = query.where('day', '>=', firstDay);
  const row = await query.executeTakeFirst();
  return fromMoneyColumn(row?.spent ?? '0');
}

function joinList(values: readonly string[] | null): string | null {
  return values === null ? null : values.join(' ');
}

function splitList(value: string | null): string[] | null {
  return value === null ? null : value.split(' ').filter((entry) => entry.length > 0);
}

function toPermissions(row: Selectable<ApiKeysTable>): KeyPermissions {
  const period = row.spend_period as SpendPeriod | null;
  const spendLimit =
    row.spend_limit_nano === null || period === null || !(SPEND_PERIODS as readonly string[]).includes(period)
      ? null
      : { limitNano: fromMoneyColumn(row.spend_limit_nano), period };
  const rpm = row.rate_limit_rpm === null ? null : Number(row.rate_limit_rpm);
  const tpm = row.rate_limit_tpm === null ? null : Number(row.rate_limit_tpm);
  return {
    // A scope name this version does not know is dropped, never widened.
    scopes: row.scopes === null ? null : splitList(row.scopes)!.filter(isApiScope),
    models: splitList(row.models),
    spendLimit,
    rateLimit: rpm === null && tpm === null ? null : { requestsPerMinute: rpm, tokensPerMinute: tpm },
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
  const permissions = key.permissions ?? FULL_PERMISSIONS;
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
    scopes: joinList(permissions.scopes),
    models: joinList(permissions.models),
    spend_limit_nano: permissions.spendLimit === null ? null : permissions.spendLimit.limitNano.toString(),
    spend_period: permissions.spendLimit?.period ?? null,
    spend_period_start:
      permissions.spendLimit === null ? 0 : spendPeriodNumber(permissions.spendLimit.period, key.createdAt),
    spend_used_nano: '0',
    spend_reserved_nano: '0',
    rate_limit_rpm: permissions.rateLimit?.requestsPerMinute ?? null,
    rate_limit_tpm: permissions.rateLimit?.tokensPerMinute ?? null,
    created_by: key.createdBy ?? null,
    project_id: key.projectId ?? defaultProjectId(key.accountId),
  };
}

export function toApiKeyRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    createdBy: row.created_by,
    projectId: row.project_id ?? defaultProjectId(row.account_id),
    name: row.name,
    keyHash: row.key_hash,
    hint: row.hint,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    permissions: toPermissions(row),
    spend: {
      periodStart: Number(row.spend_period_start),
      usedNano: fromMoneyColumn(row.spend_used_nano),
      reservedNano: fromMoneyColumn(row.spend_reserved_nano),
    },
  };
}

/**
 * A key row joined with its organisation's columns, prefixed `organisation_`, and its project's, prefixed `project_`
 * (every key lookup selects these; the project's are null only if its row were missing).
 */
export type KeyWithOrganisationRow = Selectable<ApiKeysTable> & {
  organisation_name: string;
  organisation_tier: string;
  organisation_disabled: number;
  project_models: string | null;
  project_archived_at: number | string | null;
};

/** The organisations columns of the hot paths' key lookups (after KEY_COLUMNS), in the order keyWithOrganisationRow reads them. */
export const ORGANISATION_LOOKUP_COLUMNS = ['name', 'tier', 'disabled'] as const;

/** The projects columns of the hot paths' key lookups (after ORGANISATION_LOOKUP_COLUMNS), read from `p`. */
export const PROJECT_LOOKUP_COLUMNS = ['models', 'archived_at'] as const;

/** The join every key lookup makes to read its project (`k` is api_keys, `p` projects). */
export const KEY_PROJECT_JOIN = 'left join projects p on p.id = k.project_id';

/** The api_keys columns of the hot paths' key lookups, in the order keyWithOrganisationRow reads them. */
export const KEY_COLUMNS = [
  'id',
  'account_id',
  'name',
  'key_hash',
  'hint',
  'created_at',
  'expires_at',
  'revoked_at',
  'last_used_at',
  'scopes',
  'models',
  'spend_limit_nano',
  'spend_period',
  'spend_period_start',
  'spend_used_nano',
  'spend_reserved_nano',
  'rate_limit_rpm',
  'rate_limit_tpm',
  'created_by',
  'project_id',
] as const satisfies readonly (keyof KeyWithOrganisationRow)[];

/**
 * The select list of a key lookup read as arrays (PostgreSQL's hot path; SQLite's reads the same columns as one
 * json_array): KEY_COLUMNS of `k` (api_keys), then the organisation's columns of `o` (organisations), in the order
 * keyWithOrganisationRow reads.
 */
export const KEY_LOOKUP_COLUMNS = [
  ...KEY_COLUMNS.map((column) => `k.${column}`),
  ...ORGANISATION_LOOKUP_COLUMNS.map((column) => `o.${column}`),
  ...PROJECT_LOOKUP_COLUMNS.map((column) => `p.${column}`),
].join(', ');

/** How many columns KEY_LOOKUP_COLUMNS selects: a lookup that selects more has them from this position on. */
export const KEY_LOOKUP_WIDTH = KEY_COLUMNS.length + ORGANISATION_LOOKUP_COLUMNS.length + PROJECT_LOOKUP_COLUMNS.length;

/**
 * A key lookup's array row (KEY_LOOKUP_COLUMNS) as the row the Kysely path reads: one object literal, so every
 * row has the one shape V8 reads fast (an object row of ~25 columns built name by name is a slow dictionary).
 */
export function keyWithOrganisationRow(v: readonly unknown[]): KeyWithOrganisationRow {
  return {
    id: v[0] as string,
    account_id: v[1] as string,
    name: v[2] as string,
    key_hash: v[3] as string,
    hint: v[4] as string,
    created_at: v[5] as number,
    expires_at: v[6] as number | null,
    revoked_at: v[7] as number | null,
    last_used_at: v[8] as number | null,
    scopes: v[9] as string | null,
    models: v[10] as string | null,
    spend_limit_nano: v[11] as string | number | null,
    spend_period: v[12] as string | null,
    spend_period_start: v[13] as number,
    spend_used_nano: v[14] as string | number,
    spend_reserved_nano: v[15] as string | number,
    rate_limit_rpm: v[16] as number | null,
    rate_limit_tpm: v[17] as number | null,
    created_by: v[18] as string | null,
    project_id: v[19] as string | null,
    organisation_name: v[20] as string,
    organisation_tier: v[21] as string,
    organisation_disabled: v[22] as number,
    project_models: v[23] as string | null,
    project_archived_at: v[24] as number | string | null,
  };
}

export function toApiKeyWithOrganisation(row: KeyWithOrganisationRow): ApiKeyWithOrganisation {
  return {
    key: toApiKeyRecord(row),
    organisation: {
      // A key's account_id names its organisation (0016-organisation-wallets).
      id: row.account_id,
      name: row.organisation_name,
      tier: row.organisation_tier,
      disabled: fromIntegerBoolean(Number(row.organisation_disabled)),
    },
    project: {
      id: row.project_id ?? defaultProjectId(row.account_id),
      models: splitModels(row.project_models),
      archivedAt: row.project_archived_at === null ? null : Number(row.project_archived_at),
    },
  };
}
