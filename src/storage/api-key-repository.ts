import { sql, type AliasedRawBuilder, type Kysely, type Selectable, type Updateable } from 'kysely';
import {
  FULL_PERMISSIONS,
  isApiScope,
  SPEND_PERIODS,
  type KeyLimit,
  type KeyPermissions,
  type KeySpendLimit,
  type SpendPeriod,
} from './key-permission-types.js';
import { fromIntegerBoolean, type ApiKeysTable, type Database } from './database-schema.js';
import { LIMIT_HELD_SQL_FUNCTION } from './held-in-memory.js';
import { fromMoneyColumn } from './money-sql.js';
import { clearLimitIn, lockWallet, movePeriodIn, setLimitIn } from './spend-limit-repository.js';
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
export function createApiKeyRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  /** The connection answers LIMIT_HELD_SQL_FUNCTION: limits' views add what live holds in memory take. */
  heldInMemory = false,
): ApiKeyRepository {
  const keyLimitsColumn = (table: string) =>
    sql<string | null>`${sql.raw(keyLimitsSql(table, dialect, heldInMemory))}`.as('key_limits');
  const readKey = (executor: Executor, accountId: string, id: string) =>
    readKeyWith(executor, keyLimitsColumn, accountId, id);
  return {
    async create(key: NewApiKey): Promise<ApiKeyRecord> {
      const row = toApiKeyRow(key);
      const spendLimit = key.permissions?.spendLimit ?? null;
      const limits = key.limits ?? (spendLimit === null ? [] : [spendLimit]);
      if (limits.length === 0) {
        await db.insertInto('api_keys').values(row).execute();
        return toApiKeyRecord({ ...row, key_limits: null });
      }
      return writeTransaction(db, dialect, async (trx) => {
        await trx.insertInto('api_keys').values(row).execute();
        await setKeyLimits(trx, key.accountId, key.id, limits, key.createdAt);
        return (await readKey(trx, key.accountId, key.id))!;
      });
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
          keyLimitsColumn('api_keys'),
          'projects.models as project_models',
          'projects.archived_at as project_archived_at',
        ])
        .where('api_keys.key_hash', '=', keyHash)
        .executeTakeFirst();
      return row ? toApiKeyWithOrganisation(row) : null;
    },

    async findById(accountId: string, id: string): Promise<ApiKeyRecord | null> {
      return readKey(db, accountId, id);
    },

    async listByAccount(accountId: string): Promise<ApiKeyRecord[]> {
      const rows = await db
        .selectFrom('api_keys')
        .selectAll()
        .select(keyLimitsColumn('api_keys'))
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
        // The wallet row first: the old key's limits are written under it (admission, settlement).
        await lockWallet(transaction, dialect, accountId);
        if (!(await revokeActiveKey(transaction, accountId, oldId, at))) return null;
        // The replacement stays in the old key's project unless told otherwise.
        const old = await transaction
          .selectFrom('api_keys')
          .select(['project_id'])
          .where('id', '=', oldId)
          .executeTakeFirstOrThrow();
        await transaction
          .insertInto('api_keys')
          .values({
            ...toApiKeyRow(replacement),
            project_id: replacement.projectId ?? old.project_id ?? defaultProjectId(accountId),
          })
          .execute();
        // The replacement takes over the old key's limits, spend and holds in flight included: rotating never resets
        // a spend limit.
        await transaction
          .updateTable('spend_limits')
          .set({ scope_id: replacement.id, updated_at: at })
          .where('scope', '=', 'key')
          .where('scope_id', '=', oldId)
          .execute();
        return (await readKey(transaction, accountId, replacement.id))!;
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
        // The wallet row first, as admission and settlement lock it before they write this key's limits.
        if (!(await lockWallet(trx, dialect, accountId))) return null;
        const values: Updateable<ApiKeysTable> = {};
        if (change.name !== undefined) values.name = change.name;
        if (change.expiresAt !== undefined) values.expires_at = change.expiresAt;
        if (change.scopes !== undefined) values.scopes = joinList(change.scopes);
        if (change.models !== undefined) values.models = joinList(change.models);
        if (change.rateLimit !== undefined) {
          values.rate_limit_rpm = change.rateLimit?.requestsPerMinute ?? null;
          values.rate_limit_tpm = change.rateLimit?.tokensPerMinute ?? null;
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
        const key = await readKey(trx, accountId, id);
        if (key === null || key.revokedAt !== null) return null;
        const limits =
          change.limits ?? (change.spendLimit === undefined ? undefined : [change.spendLimit ?? []].flat());
        if (limits === undefined) return key;
        // A limit kept keeps its counters and its holds in flight; a new one counts the period's settled spend so far.
        await setKeyLimits(trx, accountId, id, limits, at);
        return readKey(trx, accountId, id);
      });
    },
  };
}

/**
 * Makes the key's limits exactly `limits` (one per period), inside a transaction that holds the wallet row's lock. A
 * limit whose period goes away gives its row to a new period rather than being dropped, so the holds in flight
 * counted against it stay counted (a key's one limit moved from day to month keeps its requests in flight held).
 */
async function setKeyLimits(
  trx: Executor,
  organisationId: string,
  keyId: string,
  limits: readonly KeySpendLimit[],
  at: number,
): Promise<void> {
  const existing = await trx
    .selectFrom('spend_limits')
    .select(['id', 'period'])
    .where('scope', '=', 'key')
    .where('scope_id', '=', keyId)
    .execute();
  const wanted = new Set(limits.map((limit) => limit.period));
  const freed = existing.filter((row) => !wanted.has(row.period as SpendPeriod));
  for (const limit of limits) {
    const input = {
      organisationId,
      scope: 'key' as const,
      scopeId: keyId,
      period: limit.period,
      limitNano: limit.limitNano,
      at,
    };
    const reusable = existing.some((row) => row.period === limit.period) ? undefined : freed.shift();
    if (reusable === undefined) await setLimitIn(trx, input);
    else await movePeriodIn(trx, reusable.id, input);
  }
  for (const row of freed) {
    await clearLimitIn(trx, { organisationId, scope: 'key', scopeId: keyId, period: row.period as SpendPeriod }, at);
  }
}

/**
 * The key's own limits as one text column (`period:limit:periodStart:used:reserved`, space-separated), selected with
 * every key read: a subquery over the key's rows of spend_limits. `table` names api_keys in the query.
 */
export function keyLimitsSql(table: string, dialect: Storage['dialect'], heldInMemory = false): string {
  const reserved = heldInMemory ? `(l.reserved_nano + ${LIMIT_HELD_SQL_FUNCTION}(l.id))` : 'l.reserved_nano';
  const entry = `l.period || ':' || l.limit_nano || ':' || l.period_start || ':' || l.used_nano || ':' || ${reserved}`;
  const joined = dialect === 'postgres' ? `string_agg(${entry}, ' ')` : `group_concat(${entry}, ' ')`;
  return `(select ${joined} from spend_limits l where l.scope = 'key' and l.scope_id = ${table}.id)`;
}

async function readKeyWith(
  db: Executor,
  keyLimitsColumn: (table: string) => AliasedRawBuilder<string | null, 'key_limits'>,
  accountId: string,
  id: string,
): Promise<ApiKeyRecord | null> {
  const row = await db
    .selectFrom('api_keys')
    .selectAll()
    .select(keyLimitsColumn('api_keys'))
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? toApiKeyRecord(row) : null;
}

/** The key_limits column as limits, day first (the order of SPEND_PERIODS); an unknown period is left out. */
function parseKeyLimits(text: string | null): KeyLimit[] {
  if (text === null || text === '') return [];
  const limits: KeyLimit[] = [];
  for (const entry of text.split(' ')) {
    const [period, limit, periodStart, used, reserved] = entry.split(':');
    if (!(SPEND_PERIODS as readonly string[]).includes(period!)) continue;
    limits.push({
      period: period as SpendPeriod,
      limitNano: fromMoneyColumn(limit!),
      periodStart: Number(periodStart),
      usedNano: fromMoneyColumn(used!),
      reservedNano: fromMoneyColumn(reserved!),
    });
  }
  return limits.sort((a, b) => SPEND_PERIODS.indexOf(a.period) - SPEND_PERIODS.indexOf(b.period));
}

function joinList(values: readonly string[] | null): string | null {
  return values === null ? null : values.join(' ');
}

function splitList(value: string | null): string[] | null {
  return value === null ? null : value.split(' ').filter((entry) => entry.length > 0);
}

function toPermissions(row: Selectable<ApiKeysTable>, limits: readonly KeyLimit[]): KeyPermissions {
  const first = limits[0];
  const spendLimit = first === undefined ? null : { limitNano: first.limitNano, period: first.period };
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
    rate_limit_rpm: permissions.rateLimit?.requestsPerMinute ?? null,
    rate_limit_tpm: permissions.rateLimit?.tokensPerMinute ?? null,
    created_by: key.createdBy ?? null,
    project_id: key.projectId ?? defaultProjectId(key.accountId),
  };
}

/** A key row with its limits (`keyLimitsSql`). */
export type KeyRow = Selectable<ApiKeysTable> & { key_limits: string | null };

export function toApiKeyRecord(row: KeyRow): ApiKeyRecord {
  const limits = parseKeyLimits(row.key_limits);
  const first = limits[0];
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
    permissions: toPermissions(row, limits),
    spend: {
      periodStart: first?.periodStart ?? 0,
      usedNano: first?.usedNano ?? 0n,
      reservedNano: first?.reservedNano ?? 0n,
    },
    limits,
  };
}

/**
 * A key row joined with its organisation's columns, prefixed `organisation_`, and its project's, prefixed `project_`
 * (every key lookup selects these; the project's are null only if its row were missing).
 */
export type KeyWithOrganisationRow = KeyRow & {
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
  'rate_limit_rpm',
  'rate_limit_tpm',
  'created_by',
  'project_id',
] as const satisfies readonly (keyof Selectable<ApiKeysTable>)[];

/**
 * The select list of a key lookup read as arrays (PostgreSQL's hot path): KEY_COLUMNS of `k` (api_keys), then the
 * organisation's columns of `o` (organisations), then the key's limits, in the order keyWithOrganisationRow reads.
 */
export const KEY_LOOKUP_COLUMNS = [
  ...KEY_COLUMNS.map((column) => `k.${column}`),
  ...ORGANISATION_LOOKUP_COLUMNS.map((column) => `o.${column}`),
  ...PROJECT_LOOKUP_COLUMNS.map((column) => `p.${column}`),
  keyLimitsSql('k', 'postgres'),
].join(', ');

/** How many columns KEY_LOOKUP_COLUMNS selects: a lookup that selects more has them from this position on. */
export const KEY_LOOKUP_WIDTH =
  KEY_COLUMNS.length + ORGANISATION_LOOKUP_COLUMNS.length + PROJECT_LOOKUP_COLUMNS.length + 1;

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
    rate_limit_rpm: v[11] as number | null,
    rate_limit_tpm: v[12] as number | null,
    created_by: v[13] as string | null,
    project_id: v[14] as string | null,
    organisation_name: v[15] as string,
    organisation_tier: v[16] as string,
    organisation_disabled: v[17] as number,
    project_models: v[18] as string | null,
    project_archived_at: v[19] as number | string | null,
    key_limits: v[20] as string | null,
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
