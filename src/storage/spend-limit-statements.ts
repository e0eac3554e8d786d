import { sql } from 'kysely';
import { toLockedLimits, type LimitPeriod, type LimitRow, type LockedLimit } from './billing-rules.js';
import type { Executor } from './transactions.js';

/**
 * Spend limits in SQL (docs/billing.md#spend-limits), shared by SQLite's billing store (bound by position,
 * positional-statement.ts) and PostgreSQL's locked transactions (through Kysely). Every statement here runs inside a
 * transaction that already holds the request's wallet row (its organisation's): the lock order of
 * docs/architecture.md#lock-order. Every writer of spend_limits takes that lock first, so the wallet row serialises
 * them all, on one database or across instances sharing PostgreSQL.
 */

/**
 * Every limit over a request of `:keyId` paid by `:organisationId`: the organisation's, the key's project's (when it
 * has one), the key's. One indexed lookup by organisation.
 */
export const APPLICABLE_LIMITS_SQL = `
  select id, scope, scope_id, period, cast(limit_nano as text) as limit_nano, cast(used_nano as text) as used_nano,
    cast(reserved_nano as text) as reserved_nano, period_start
  from spend_limits
  where organisation_id = :organisationId
    and ((scope = 'organisation' and scope_id = :organisationId)
      or (scope = 'project' and scope_id = (select project_id from api_keys where id = :keyId))
      or (scope = 'key' and scope_id = :keyId))
  order by id`;

/**
 * A hold (or a slice of it) taken on one limit: the counter moved to the current period `:period`, and the limit
 * re-checked in the statement itself (belt and braces: the wallet row's lock already serialises it).
 */
export const TAKE_LIMIT_HOLD_SQL = `
  update spend_limits set
    reserved_nano = reserved_nano + cast(:hold as bigint),
    used_nano = case when period_start >= cast(:period as bigint) then used_nano else 0 end,
    period_start = case when period_start < cast(:period as bigint) then cast(:period as bigint) else period_start end
  where id = :limitId
    and (case when period_start >= cast(:period as bigint) then used_nano else 0 end) + reserved_nano + cast(:hold as bigint) <= limit_nano`;

/** What a reservation holds against one limit, grown by each slice, so settlement releases exactly that. */
export const RECORD_LIMIT_HOLD_SQL = `
  insert into spend_limit_holds (request_id, limit_id, hold_nano) values (:requestId, :limitId, cast(:hold as bigint))
  on conflict (request_id, limit_id) do update set hold_nano = spend_limit_holds.hold_nano + excluded.hold_nano`;

/** Settlement's and the sweeper's claim of a reservation's holds on limits (each released once). */
export const CLAIM_LIMIT_HOLDS_SQL = `
  delete from spend_limit_holds where request_id = :requestId
  returning limit_id, cast(hold_nano as text) as hold_nano`;

export const RELEASE_LIMIT_HOLD_SQL = `
  update spend_limits set reserved_nano = reserved_nano - cast(:hold as bigint) where id = :limitId`;

/**
 * A charge added to one limit's spend of the request's period `:period` (a newer period restarts the counter; a
 * request of an older period than the counter's no longer counts).
 */
export const CHARGE_LIMIT_SQL = `
  update spend_limits set
    used_nano = case
      when period_start = cast(:period as bigint) then used_nano + cast(:charged as bigint)
      when period_start < cast(:period as bigint) then cast(:charged as bigint)
      else used_nano end,
    period_start = case when period_start < cast(:period as bigint) then cast(:period as bigint) else period_start end
  where id = :limitId`;

/** A statement with `:name` parameters (the ones above) as a Kysely query, each parameter bound. */
function namedStatement(text: string, values: Readonly<Record<string, string | number>>) {
  const pieces = text.split(/:([a-zA-Z]+)/);
  let query = sql`${sql.raw(pieces[0]!)}`;
  for (let index = 1; index < pieces.length; index += 2) {
    const name = pieces[index]!;
    if (!(name in values)) throw new Error(`No value for :${name}.`);
    query = sql`${query}${values[name]}${sql.raw(pieces[index + 1]!)}`;
  }
  return query;
}

/** The limits over a request, read inside a transaction that holds its wallet row's lock. */
export async function readApplicableLimits(
  trx: Executor,
  organisationId: string,
  keyId: string,
): Promise<LockedLimit[]> {
  const result = await namedStatement(APPLICABLE_LIMITS_SQL, { organisationId, keyId }).execute(trx);
  return toLockedLimits(result.rows as LimitRow[]);
}

/**
 * Takes `holdNano` on each limit (TAKE_LIMIT_HOLD_SQL) and records it against the request; false, having taken
 * only part, when one no longer fits: the caller then throws, rolling its transaction back.
 */
export async function takeLimitHolds(
  trx: Executor,
  requestId: string,
  limits: readonly LimitPeriod[],
  holdNano: bigint,
): Promise<boolean> {
  if (holdNano === 0n) return true;
  const hold = holdNano.toString();
  for (const limit of limits) {
    const taken = await namedStatement(TAKE_LIMIT_HOLD_SQL, {
      limitId: limit.id,
      hold,
      period: limit.periodNumber,
    }).execute(trx);
    if (taken.numAffectedRows !== 1n) return false;
    await namedStatement(RECORD_LIMIT_HOLD_SQL, { requestId, limitId: limit.id, hold }).execute(trx);
  }
  return true;
}

/** Releases what a reservation held on limits (those still there); returns the total released per limit. */
export async function releaseLimitHolds(trx: Executor, requestId: string): Promise<void> {
  const claimed = await namedStatement(CLAIM_LIMIT_HOLDS_SQL, { requestId }).execute(trx);
  for (const row of claimed.rows as Array<{ limit_id: string; hold_nano: string }>) {
    await namedStatement(RELEASE_LIMIT_HOLD_SQL, { limitId: row.limit_id, hold: row.hold_nano }).execute(trx);
  }
}

/** Adds a settled charge to each limit over the request, in the period each counts at the request's start. */
export async function chargeLimits(trx: Executor, limits: readonly LimitPeriod[], chargedNano: bigint): Promise<void> {
  if (chargedNano === 0n) return;
  for (const limit of limits) {
    await namedStatement(CHARGE_LIMIT_SQL, {
      limitId: limit.id,
      charged: chargedNano.toString(),
      period: limit.periodNumber,
    }).execute(trx);
  }
}
