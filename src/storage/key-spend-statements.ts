import { sql } from 'kysely';
import { utcMonthNumber } from './key-permission-types.js';
import { toLockedKeySpend, type LockedKeySpend } from './billing-rules.js';
import { money } from './money-sql.js';
import type { Executor } from './transactions.js';

/**
 * A key's spend limit in SQL (docs/architecture.md#key-scopes-and-limits), shared by SQLite's billing store (bound by
 * position) and PostgreSQL's locked transactions (through Kysely); PostgreSQL's one-statement paths write the same rules
 * as CTEs (postgres-billing-statements.ts). Every statement here runs inside a transaction that already holds the key's
 * wallet row (its organisation's): the lock order of docs/architecture.md#lock-order.
 */

const MS_PER_DAY = 86_400_000;

/**
 * The key's spend counters at settlement, one statement for both dialects (`:name` parameters: better-sqlite3
 * binds them by position, Kysely through `namedStatement`): the hold's part released, and the charge added to the
 * period of the request's start (a newer period restarts the counter; a request of an older period no longer
 * counts). Only keys with a limit count spend; a hold counted against a key is released even if its limit was
 * removed meanwhile.
 */
export const SETTLE_KEY_SPEND_SQL = `
  update api_keys set
    spend_reserved_nano = spend_reserved_nano - cast(:keyHold as bigint),
    spend_used_nano = case
      when spend_limit_nano is null then spend_used_nano
      when spend_period_start = (case spend_period when 'day' then cast(:day as bigint) when 'month' then cast(:month as bigint) else 0 end) then spend_used_nano + cast(:charged as bigint)
      when spend_period_start < (case spend_period when 'day' then cast(:day as bigint) when 'month' then cast(:month as bigint) else 0 end) then cast(:charged as bigint)
      else spend_used_nano end,
    spend_period_start = case
      when spend_limit_nano is not null and spend_period_start < (case spend_period when 'day' then cast(:day as bigint) when 'month' then cast(:month as bigint) else 0 end)
        then (case spend_period when 'day' then cast(:day as bigint) when 'month' then cast(:month as bigint) else 0 end)
      else spend_period_start end
  where id = :keyId and (spend_limit_nano is not null or cast(:keyHold as bigint) <> 0)`;

/**
 * Admission's write to the key's counters: the hold added, the counter moved to the current period, and the
 * limit re-checked in the statement itself (belt and braces: the wallet row's lock already serialises it).
 */
export const TAKE_KEY_HOLD_SQL = `
  update api_keys set
    spend_reserved_nano = spend_reserved_nano + cast(:hold as bigint),
    spend_used_nano = case when spend_period_start >= cast(:period as bigint) then spend_used_nano else 0 end,
    spend_period_start = case when spend_period_start < cast(:period as bigint) then cast(:period as bigint) else spend_period_start end
  where id = :keyId and spend_limit_nano is not null
    and (case when spend_period_start >= cast(:period as bigint) then spend_used_nano else 0 end) + spend_reserved_nano + cast(:hold as bigint) <= spend_limit_nano`;

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

/**
 * Adds `holdNano` to the key's held counter if it still fits its limit in `period` (TAKE_KEY_HOLD_SQL), inside a
 * transaction that holds the wallet row's lock; false when it does not fit. Admission uses it, and so must any hold
 * that grows later (a slice of output): read the key with `readKeySpend`, plan the slice within
 * `keySpendState(...).remainingNano` as well as the account's money, then call this with the slice and raise the
 * reservation's key_hold_nano by it in the same transaction, so settlement releases exactly what was held.
 */
export async function takeKeyHold(trx: Executor, keyId: string, holdNano: bigint, period: number): Promise<boolean> {
  const taken = await namedStatement(TAKE_KEY_HOLD_SQL, { keyId, hold: holdNano.toString(), period }).execute(trx);
  return taken.numAffectedRows === 1n;
}

/** The key's spend limit and counters, read inside a transaction that holds its account's lock. */
export async function readKeySpend(trx: Executor, keyId: string): Promise<LockedKeySpend | null> {
  const row = await trx
    .selectFrom('api_keys')
    .select(['spend_period', 'spend_period_start'])
    .select([
      sql<string | null>`cast(spend_limit_nano as text)`.as('spend_limit'),
      money('spend_used_nano').as('spend_used'),
      money('spend_reserved_nano').as('spend_reserved'),
    ])
    .where('id', '=', keyId)
    .executeTakeFirst();
  return toLockedKeySpend(row);
}

/** Settlement's write to the key's counters (see SETTLE_KEY_SPEND_SQL). */
export async function settleKeySpend(
  trx: Executor,
  keyId: string,
  keyHoldNano: bigint,
  chargedNano: bigint,
  requestStartedAt: number,
): Promise<void> {
  await namedStatement(SETTLE_KEY_SPEND_SQL, {
    keyId,
    keyHold: keyHoldNano.toString(),
    charged: chargedNano.toString(),
    day: Math.floor(requestStartedAt / MS_PER_DAY),
    month: utcMonthNumber(requestStartedAt),
  }).execute(trx);
}
