import { sql, type Kysely, type Selectable } from 'kysely';
import type { HeldInMemory } from './held-in-memory.js';
import { randomHex } from '../ids/random-hex.js';
import type { Database, SpendLimitsTable } from './database-schema.js';
import {
  spendPeriodFirstDay,
  spendPeriodNumber,
  spendPeriodResetsAt,
  type SpendPeriod,
} from './key-permission-types.js';
import { fromMoneyColumn } from './money-sql.js';
import { isLimitScope, type LimitScope, type SetSpendLimit, type SpendLimitRecord } from './spend-limit-types.js';
import type { SpendLimitRepository, SpendLimitSelector } from './spend-limit-types.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

/**
 * Spend limits as the dashboard, the key API and the CLI set and list them (docs/billing.md#spend-limits). Every write
 * locks the organisation's wallet row first, as admission and settlement do before they touch a limit's counters, so
 * a limit never changes in the middle of a hold being taken against it.
 */
export function createSpendLimitRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  /** SQLite's live holds in memory: what a limit holds includes them. */
  held?: HeldInMemory,
): SpendLimitRepository {
  return {
    async list(organisationId, at, filter = {}) {
      let query = db.selectFrom('spend_limits').selectAll().where('organisation_id', '=', organisationId);
      if (filter.scope !== undefined) query = query.where('scope', '=', filter.scope);
      if (filter.scopeId !== undefined) query = query.where('scope_id', '=', filter.scopeId);
      const rows = await query.orderBy('scope').orderBy('scope_id').orderBy('period').execute();
      return rows.flatMap((row) => {
        const record = toRecord(row, at);
        if (record === null) return [];
        if (held !== undefined) record.reservedNano += held.limitNano(record.id);
        return [record];
      });
    },

    async set(input) {
      return writeTransaction(db, dialect, async (trx) => {
        await lockWallet(trx, dialect, input.organisationId);
        return setLimitIn(trx, input);
      });
    },

    async clear(selector, at) {
      return writeTransaction(db, dialect, async (trx) => {
        await lockWallet(trx, dialect, selector.organisationId);
        return clearLimitIn(trx, selector, at);
      });
    },
  };
}

/** The wallet row's lock, taken before any limit is written (docs/architecture.md#lock-order). */
export async function lockWallet(trx: Executor, dialect: Storage['dialect'], organisationId: string): Promise<boolean> {
  let lock = trx.selectFrom('organisations').select('id').where('id', '=', organisationId);
  if (dialect === 'postgres') lock = lock.forNoKeyUpdate();
  return (await lock.executeTakeFirst()) !== undefined;
}

async function findLimit(
  trx: Executor,
  selector: SpendLimitSelector,
): Promise<Selectable<SpendLimitsTable> | undefined> {
  return trx
    .selectFrom('spend_limits')
    .selectAll()
    .where('organisation_id', '=', selector.organisationId)
    .where('scope', '=', selector.scope)
    .where('scope_id', '=', selector.scopeId)
    .where('period', '=', selector.period)
    .executeTakeFirst();
}

/**
 * Sets one limit inside a transaction that holds the wallet row's lock. A changed limit keeps its counters (holds
 * in flight stay counted); a new one starts from what its scope settled in the current period.
 */
export async function setLimitIn(
  trx: Executor,
  input: SetSpendLimit,
): Promise<{ before: SpendLimitRecord | null; after: SpendLimitRecord }> {
  const existing = await findLimit(trx, input);
  if (existing !== undefined) {
    await trx
      .updateTable('spend_limits')
      .set({ limit_nano: input.limitNano.toString(), updated_at: input.at })
      .where('id', '=', existing.id)
      .execute();
  } else {
    await trx
      .insertInto('spend_limits')
      .values({
        id: `sl_${randomHex(12)}`,
        organisation_id: input.organisationId,
        scope: input.scope,
        scope_id: input.scopeId,
        period: input.period,
        limit_nano: input.limitNano.toString(),
        used_nano: (await settledSpend(trx, input, input.at)).toString(),
        reserved_nano: '0',
        period_start: spendPeriodNumber(input.period, input.at),
        created_at: input.at,
        updated_at: input.at,
      })
      .execute();
  }
  const after = toRecord((await findLimit(trx, input))!, input.at)!;
  return { before: existing === undefined ? null : toRecord(existing, input.at), after };
}

/** Removes one limit (and what holds counted against it) inside a transaction that holds the wallet row's lock. */
export async function clearLimitIn(
  trx: Executor,
  selector: SpendLimitSelector,
  at: number,
): Promise<SpendLimitRecord | null> {
  const existing = await findLimit(trx, selector);
  if (existing === undefined) return null;
  await trx.deleteFrom('spend_limit_holds').where('limit_id', '=', existing.id).execute();
  await trx.deleteFrom('spend_limits').where('id', '=', existing.id).execute();
  return toRecord(existing, at);
}

/**
 * Gives an existing limit another period (and amount), keeping its id, so the holds in flight counted against it
 * stay counted: a key's one limit moved from one period to another, as before keys had several. Its spend starts
 * from what its scope settled in the new period.
 */
export async function movePeriodIn(trx: Executor, limitId: string, input: SetSpendLimit): Promise<void> {
  await trx
    .updateTable('spend_limits')
    .set({
      period: input.period,
      limit_nano: input.limitNano.toString(),
      used_nano: (await settledSpend(trx, input, input.at)).toString(),
      period_start: spendPeriodNumber(input.period, input.at),
      updated_at: input.at,
    })
    .where('id', '=', limitId)
    .execute();
}

/** What a scope has settled in the period `at` falls in, from the daily rollup (periods are whole UTC days). */
async function settledSpend(trx: Executor, selector: SpendLimitSelector, at: number): Promise<bigint> {
  const firstDay = spendPeriodFirstDay(selector.period, at);
  let query = trx
    .selectFrom('usage_daily')
    .select(sql<string>`cast(coalesce(sum(cost_nano), 0) as text)`.as('spent'))
    .where('account_id', '=', selector.organisationId);
  if (selector.scope === 'key') query = query.where('api_key_id', '=', selector.scopeId);
  // A project's keys' spend: the rollup has it per key.
  if (selector.scope === 'project') query = query.where('api_key_id', 'in', projectKeyIds(trx, selector.scopeId));
  if (firstDay !== null) query = query.where('day', '>=', firstDay);
  const row = await query.executeTakeFirst();
  return fromMoneyColumn(row?.spent ?? '0');
}

/** The ids of a project's keys. */
function projectKeyIds(trx: Executor, projectId: string) {
  return trx.selectFrom('api_keys').select('id').where('project_id', '=', projectId);
}

/** A stored limit as listed at `at`: an older period's spend counts as nothing; null for an unknown scope or period. */
export function toRecord(row: Selectable<SpendLimitsTable>, at: number): SpendLimitRecord | null {
  if (!isLimitScope(row.scope)) return null;
  const period = row.period as SpendPeriod;
  const current = spendPeriodNumber(period, at);
  return {
    id: row.id,
    organisationId: row.organisation_id,
    scope: row.scope as LimitScope,
    scopeId: row.scope_id,
    period,
    limitNano: fromMoneyColumn(row.limit_nano),
    usedNano: Number(row.period_start) >= current ? fromMoneyColumn(row.used_nano) : 0n,
    reservedNano: fromMoneyColumn(row.reserved_nano),
    resetsAt: spendPeriodResetsAt(period, at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
