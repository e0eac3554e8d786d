import { sql, type Kysely } from 'kysely';
import { ledgerId } from './billing-rules.js';
import { fromIntegerBoolean, toIntegerBoolean, type Database } from './database-schema.js';
import { ACCOUNT_HELD_SQL_FUNCTION, type HeldInMemory } from './held-in-memory.js';
import { fromMoneyColumn, money } from './money-sql.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

/** What an account's tier is made of (0008-tier-upgrades), read under the wallet row's lock. */
export interface TierState {
  accountId: string;
  /** The tier requests are limited by. */
  tier: string;
  grantedTier: string;
  boughtTier: string | null;
  boughtUntil: number | null;
  renews: boolean;
  /** Top-ups and redeemed codes, in total: what "reached by total paid" compares. */
  paidTotalNano: bigint;
  balanceNano: bigint;
  reservedNano: bigint;
}

/** What to write, decided from the locked state. `charge` is taken from the balance with a `tier` ledger entry. */
export interface TierChange {
  tier: string;
  grantedTier?: string;
  bought?: { tier: string | null; until: number | null; renews: boolean };
  charge?: { amountNano: bigint; idempotencyKey: string; note: string; at: number };
}

export type TierDecision = { change: TierChange } | { refused: string } | { unchanged: true };

export type TierChangeResult =
  | { applied: true; state: TierState }
  | { applied: false; state: TierState; refused?: string };

export interface TierRepository {
  state(accountId: string): Promise<TierState | null>;
  /**
   * One transaction under the wallet row's lock: read the state, let `decide` choose, write it. A charge never
   * takes more than is available (balance less holds): `decide` sees the same figures, and the write re-checks.
   */
  change(accountId: string, decide: (state: TierState) => TierDecision): Promise<TierChangeResult | null>;
  /** Accounts whose bought period ended at or before `now` (renew or lapse). */
  periodsEnded(now: number, limit: number): Promise<string[]>;
  /** The account's tier and bought tier alone (one row, no ledger sum): what the dashboard's every page asks. */
  boughtTier(accountId: string): Promise<Pick<TierState, 'tier' | 'boughtTier' | 'boughtUntil'> | null>;
}

export function createTierRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  /** SQLite's live holds in memory: what the account holds includes them. */
  held?: HeldInMemory,
): TierRepository {
  // What the charge's write compares the balance with: on SQLite also what live holds in memory take, read by the
  // write itself, so no hold can come between the check and the charge.
  const heldSql =
    held === undefined ? sql`reserved_nano` : sql`(reserved_nano + ${sql.raw(ACCOUNT_HELD_SQL_FUNCTION)}(id))`;
  async function read(executor: Executor, accountId: string, lock: boolean): Promise<TierState | null> {
    let query = executor
      .selectFrom('organisations')
      .select(['id', 'tier', 'granted_tier', 'bought_tier', 'bought_tier_until', 'bought_tier_renews'])
      .select([money('balance_nano').as('balance'), money('reserved_nano').as('reserved')])
      .where('id', '=', accountId);
    // The same lock every money write of the account takes first (the billing stores and billing-ledger-repository.ts), so no deadlock.
    if (lock && dialect === 'postgres') query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    if (row === undefined) return null;
    const paid = await executor
      .selectFrom('ledger_entries')
      .select(sql<string>`cast(coalesce(sum(amount_nano), 0) as text)`.as('paid'))
      .where('account_id', '=', accountId)
      .where('kind', 'in', ['topup', 'redemption'])
      .where(sql<boolean>`amount_nano > 0`)
      .executeTakeFirstOrThrow();
    return {
      accountId,
      tier: row.tier,
      grantedTier: row.granted_tier,
      boughtTier: row.bought_tier,
      boughtUntil: row.bought_tier_until === null ? null : Number(row.bought_tier_until),
      renews: fromIntegerBoolean(Number(row.bought_tier_renews)),
      paidTotalNano: fromMoneyColumn(paid.paid),
      balanceNano: fromMoneyColumn(row.balance),
      reservedNano: fromMoneyColumn(row.reserved) + (held?.account(accountId)?.nano ?? 0n),
    };
  }

  return {
    state: (accountId) => read(db, accountId, false),

    async change(accountId, decide) {
      return writeTransaction(db, dialect, async (trx) => {
        const state = await read(trx, accountId, true);
        if (state === null) return null;
        const decision = decide(state);
        if ('refused' in decision) return { applied: false, state, refused: decision.refused };
        if ('unchanged' in decision) return { applied: false, state };
        const { change } = decision;
        let balance = state.balanceNano;
        if (change.charge !== undefined) {
          const { amountNano, idempotencyKey, note, at } = change.charge;
          if (amountNano <= 0n || amountNano > state.balanceNano - state.reservedNano)
            return { applied: false, state, refused: 'insufficient_balance' };
          balance -= amountNano;
          const inserted = await trx
            .insertInto('ledger_entries')
            .values({
              id: ledgerId(at),
              account_id: accountId,
              kind: 'tier',
              amount_nano: sql`cast(${(-amountNano).toString()} as bigint)`,
              balance_after_nano: sql`cast(${balance.toString()} as bigint)`,
              idempotency_key: idempotencyKey,
              request_id: null,
              note,
              created_at: at,
            })
            .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
            .executeTakeFirst();
          // Booked before (a retried renewal): nothing more to do.
          if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return { applied: false, state };
        }
        const updated = await trx
          .updateTable('organisations')
          .set({
            tier: change.tier,
            ...(change.grantedTier === undefined ? {} : { granted_tier: change.grantedTier }),
            ...(change.bought === undefined
              ? {}
              : {
                  bought_tier: change.bought.tier,
                  bought_tier_until: change.bought.until,
                  bought_tier_renews: toIntegerBoolean(change.bought.renews),
                }),
            ...(change.charge === undefined
              ? {}
              : { balance_nano: sql`balance_nano - cast(${change.charge.amountNano.toString()} as bigint)` }),
          })
          .where('id', '=', accountId)
          // Belt and braces: a charge never takes the balance below what requests in flight hold.
          .$if(change.charge !== undefined, (query) =>
            query.where(
              sql<boolean>`balance_nano - ${heldSql} >= cast(${change.charge!.amountNano.toString()} as bigint)`,
            ),
          )
          .executeTakeFirst();
        if (updated.numUpdatedRows !== 1n) throw new Error('The account changed under its lock.');
        const after = await read(trx, accountId, false);
        return { applied: true, state: after! };
      });
    },

    async boughtTier(accountId) {
      const row = await db
        .selectFrom('organisations')
        .select(['tier', 'bought_tier', 'bought_tier_until'])
        .where('id', '=', accountId)
        .executeTakeFirst();
      if (row === undefined) return null;
      return {
        tier: row.tier,
        boughtTier: row.bought_tier,
        boughtUntil: row.bought_tier_until === null ? null : Number(row.bought_tier_until),
      };
    },

    async periodsEnded(now, limit) {
      const rows = await db
        .selectFrom('organisations')
        .select('id')
        .where('bought_tier_until', 'is not', null)
        .where('bought_tier_until', '<=', now)
        .limit(limit)
        .execute();
      return rows.map((row) => row.id);
    },
  };
}
