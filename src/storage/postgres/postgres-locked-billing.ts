import { sql, type Kysely, type Transaction } from 'kysely';
import {
  admitted,
  decideAdmission,
  ledgerId,
  needsLedgerLine,
  planSlice,
  settledResult,
  settledUsage,
  settlementAmounts,
  toLockedAccount,
  type ClaimedHold,
  type LockedAccount,
} from '../billing-rules.js';
import type {
  BillingStore,
  HoldCheckpoint,
  OrphanBiller,
  ReserveInput,
  ReserveResult,
  SettleInput,
  SettleResult,
  SettlementPricer,
  SliceResult,
  SweepResult,
} from '../billing-types.js';
import type { Database } from '../database-schema.js';
import { chargeLimits, readApplicableLimits, releaseLimitHolds, takeLimitHolds } from '../spend-limit-statements.js';
import { amount, fromMoneyColumn, money } from '../money-sql.js';
import type { UsageRecord } from '../types.js';
import { addToDailyRollup, toUsageRow } from '../usage-repository.js';

type Trx = Transaction<Database>;

/** Thrown inside the settlement transaction to roll it back when the request id was settled before. */
class AlreadySettled extends Error {}

/**
 * PostgreSQL's locked path: each call one transaction that locks the wallet row first (FOR NO KEY UPDATE), reads what
 * it needs, lets the pure rules decide (billing-rules.ts) and writes. The billing store (postgres-billing-store.ts)
 * takes it where its one-statement path declines to decide (a refusal, a plan the row no longer fits, a settlement
 * the balance caps, or a request any spend limit applies to), for the sweeper, and for a hold's expiry. Slower (one round trip a statement),
 * never wrong: every decision is made on the locked row.
 */
export type PostgresLockedBilling = Pick<
  BillingStore,
  'reserve' | 'settle' | 'grantSlice' | 'extendHold' | 'sweepExpiredReservations'
>;

export function createPostgresLockedBilling(db: Kysely<Database>): PostgresLockedBilling {
  /**
   * Reads the account's money under the transaction's lock. Every write transaction takes this lock before touching
   * any other row of the account, so they cannot deadlock. NO KEY UPDATE: the row's key never changes, so foreign-key
   * checks of other rows (key-share locks) are not blocked by it.
   */
  async function lockAccount(trx: Trx, accountId: string, holdOnly = false): Promise<LockedAccount | null> {
    const row = await trx
      .selectFrom('organisations')
      .select(['free_day', 'free_used_tokens', 'free_reserved_tokens'])
      .select([money('balance_nano').as('balance'), money('reserved_nano').as('reserved')])
      // A transaction that writes nothing but a hold commits without waiting for the WAL flush (decision record
      // 0020), set in this first statement so it costs no round trip; local to the transaction, like SET LOCAL.
      .$if(holdOnly, (query) => query.select(sql<string>`set_config('synchronous_commit', 'off', true)`.as('commit')))
      .where('id', '=', accountId)
      .forNoKeyUpdate()
      .executeTakeFirst();
    return row === undefined ? null : toLockedAccount(row);
  }

  /**
   * The settlement of a claimed hold (or none) inside the caller's transaction, the account locked: the usage row,
   * the charge (split by billing/usage-split.ts's rule within the balance and the key's spend limit; what neither
   * covers is recorded as unbilled), the hold released, the ledger entry and the daily rollup. Undefined, having
   * written nothing, when the request id was settled before (the usage row's primary key is what makes settlement
   * happen once per request id).
   */
  async function settleClaimed(
    trx: Trx,
    account: LockedAccount,
    usage: UsageRecord,
    claimed: ClaimedHold | undefined,
    price: SettlementPricer,
    freeAllowanceTokens: number,
  ): Promise<SettleResult | undefined> {
    // The limits after the account's row (lock order): their counters are only written under the wallet row's lock.
    const limits = await readApplicableLimits(trx, usage.accountId, usage.apiKeyId);
    const amounts = settlementAmounts(
      account,
      claimed,
      price,
      { freeAllowanceTokens, startedAt: usage.createdAt },
      limits,
    );
    const { holdNano: hold, chargedNano: charged, unbilledNano: unbilled } = amounts;
    const inserted = await trx
      .insertInto('usage_records')
      .values(toUsageRow(settledUsage(usage, amounts)))
      .onConflict((conflict) => conflict.column('request_id').doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return undefined;
    await trx
      .updateTable('organisations')
      .set({
        balance_nano: sql`balance_nano - ${amount(charged)}`,
        reserved_nano: sql`reserved_nano - ${amount(hold)}`,
        free_reserved_tokens: sql`free_reserved_tokens - ${amounts.heldFreeTokens}`,
        free_used_tokens: sql`free_used_tokens + ${amounts.freeTokensUsedToday}`,
      })
      .where('id', '=', usage.accountId)
      .execute();
    // The hold's part on each limit released and the charge counted against each limit's period, in this transaction.
    await releaseLimitHolds(trx, usage.requestId);
    await chargeLimits(trx, amounts.chargedLimits, charged);
    if (needsLedgerLine(amounts)) {
      const at = usage.createdAt + usage.latencyMs;
      await trx
        .insertInto('ledger_entries')
        .values({
          id: ledgerId(at),
          account_id: usage.accountId,
          kind: 'usage',
          amount_nano: amount(-charged),
          balance_after_nano: amount(account.balance - charged),
          idempotency_key: `usage:${usage.requestId}`,
          request_id: usage.requestId,
          note: usage.model,
          created_at: at,
          unbilled_tokens: amounts.unbilledTokens,
          unbilled_nano: unbilled.toString(),
        })
        .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
        .execute();
    }
    // Daily rollup (usage_daily, kept after retention deletes the usage row): one upsert in this same
    // transaction, reached only when the usage row was inserted, so it counts each request exactly once.
    await addToDailyRollup(trx, settledUsage(usage, amounts));
    return settledResult(amounts);
  }

  /**
   * Releases a claimed hold without a charge: its money and today's free tokens go back to the account, and what
   * it held against each spend limit back to the limit.
   */
  async function releaseClaimed(
    trx: Trx,
    account: LockedAccount | null,
    accountId: string,
    requestId: string,
    claimed: ClaimedHold,
  ): Promise<void> {
    const heldFree = account !== null && claimed.freeDay === account.freeDay ? claimed.freeTokens : 0;
    await releaseLimitHolds(trx, requestId);
    await trx
      .updateTable('organisations')
      .set({
        reserved_nano: sql`reserved_nano - ${amount(claimed.holdNano)}`,
        free_reserved_tokens: sql`free_reserved_tokens - ${heldFree}`,
      })
      .where('id', '=', accountId)
      .execute();
  }

  /** One claimed hold's fate inside its sweep transaction. */
  type SweepOutcome = { kind: 'released' } | { kind: 'settled'; unbilled: SweepResult['unbilled'][number] };

  /** Claims expired holds one by one, each in its own transaction: settled at its checkpoint, or released. */
  async function sweep(now: number, bill: OrphanBiller, limit: number): Promise<SweepResult> {
    const expired = await db
      .selectFrom('reservations')
      .select('request_id')
      .where('expires_at', '<', now)
      .limit(limit)
      .execute();
    const result: SweepResult = { released: 0, settled: 0, unbilled: [] };
    for (const { request_id: requestId } of expired) {
      const outcome = await db.transaction().execute(async (trx): Promise<SweepOutcome | undefined> => {
        const owner = await trx
          .selectFrom('reservations')
          .select('account_id')
          .where('request_id', '=', requestId)
          .executeTakeFirst();
        if (owner === undefined) return undefined;
        const account = await lockAccount(trx, owner.account_id);
        // The delete is the claim: another instance's sweeper or a late settlement may have taken it first. The
        // expiry is checked again: a hold renewed meanwhile belongs to a live request.
        const row = await trx
          .deleteFrom('reservations')
          .where('request_id', '=', requestId)
          .where('expires_at', '<', now)
          .returning(['account_id', 'api_key_id', 'free_tokens', 'free_day', 'created_at', 'model', 'family', 'stream'])
          .returning([
            'checkpoint_input_tokens',
            'checkpoint_cache_read_tokens',
            'checkpoint_cache_write_tokens',
            'checkpoint_cache_write_1h_tokens',
            'checkpoint_output_tokens',
            'checkpoint_at',
          ])
          .returning([money('hold_nano').as('hold')])
          .executeTakeFirst();
        if (row === undefined) return undefined;
        const claimed: ClaimedHold = {
          holdNano: fromMoneyColumn(row.hold),
          freeTokens: Number(row.free_tokens),
          freeDay: Number(row.free_day),
        };
        const checkpoint: HoldCheckpoint | null =
          row.checkpoint_at === null || row.model === null || row.family === null
            ? null
            : {
                model: row.model,
                family: row.family,
                stream: Number(row.stream) === 1,
                inputTokens: Number(row.checkpoint_input_tokens),
                cacheReadTokens: Number(row.checkpoint_cache_read_tokens),
                cacheWriteTokens: Number(row.checkpoint_cache_write_tokens),
                cacheWrite1hTokens: Number(row.checkpoint_cache_write_1h_tokens),
                outputTokens: Number(row.checkpoint_output_tokens),
                at: Number(row.checkpoint_at),
              };
        const billed =
          account === null
            ? undefined
            : bill({
                requestId,
                accountId: row.account_id,
                apiKeyId: row.api_key_id,
                createdAt: Number(row.created_at),
                checkpoint,
              });
        if (billed !== undefined && account !== null) {
          const settled = await settleClaimed(
            trx,
            account,
            billed.usage,
            claimed,
            billed.price,
            billed.freeAllowanceTokens,
          );
          if (settled?.settled === true) {
            const { unbilledTokens: tokens, unbilledNano: nanoUsd } = settled;
            return { kind: 'settled', unbilled: { model: billed.usage.model, tokens, nanoUsd } };
          }
        }
        await releaseClaimed(trx, account, row.account_id, requestId, claimed);
        return { kind: 'released' };
      });
      if (outcome === undefined) continue;
      result[outcome.kind] += 1;
      // Counted once the transaction has committed: a rolled-back settlement left nothing unbilled.
      if (outcome.kind === 'settled' && (outcome.unbilled.tokens > 0 || outcome.unbilled.nanoUsd > 0n))
        result.unbilled.push(outcome.unbilled);
    }
    return result;
  }

  return {
    async reserve(input: ReserveInput): Promise<ReserveResult> {
      return db.transaction().execute(async (trx) => {
        const account = await lockAccount(trx, input.accountId, true);
        if (account === null) throw new Error(`No account ${input.accountId}.`);
        // The limits after the account's row (lock order): their counters are only written under the wallet row's lock.
        const limits = await readApplicableLimits(trx, input.accountId, input.apiKeyId);
        const { sameDay, state, plan, limits: periods } = decideAdmission(account, input, limits);
        if (!plan.admitted) return { admitted: false, reason: plan.reason, state };
        if (periods !== undefined && !(await takeLimitHolds(trx, input.requestId, periods, plan.holdNano))) {
          // Thrown, so the transaction rolls back whole: the account's hold is not taken either.
          throw new Error("A spend limit changed under its organisation's lock.");
        }
        const updated = await trx
          .updateTable('organisations')
          .set({
            reserved_nano: sql`reserved_nano + ${amount(plan.holdNano)}`,
            free_day: input.day,
            free_used_tokens: sameDay ? sql`free_used_tokens` : 0,
            free_reserved_tokens: sameDay ? sql`free_reserved_tokens + ${plan.freeTokens}` : plan.freeTokens,
          })
          .where('id', '=', input.accountId)
          // Belt and braces: the conditional update refuses an overdraft even if the lock were ever bypassed.
          .where(sql`balance_nano - reserved_nano`, '>=', amount(plan.holdNano))
          .executeTakeFirst();
        if (updated.numUpdatedRows !== 1n) throw new Error('The account changed under its lock.');
        await trx
          .insertInto('reservations')
          .values({
            request_id: input.requestId,
            account_id: input.accountId,
            api_key_id: input.apiKeyId,
            hold_nano: amount(plan.holdNano),
            free_tokens: plan.freeTokens,
            free_day: input.day,
            max_output_tokens: plan.maxOutputTokens,
            created_at: input.createdAt,
            expires_at: input.expiresAt,
          })
          .execute();
        return admitted(input, plan, periods === undefined ? 0n : plan.holdNano);
      });
    },

    async settle({ usage, price, freeAllowanceTokens }: SettleInput): Promise<SettleResult> {
      try {
        return await db.transaction().execute(async (trx) => {
          const account = await lockAccount(trx, usage.accountId);
          if (account === null) throw new Error(`No account ${usage.accountId}.`);
          // The hold is claimed first because its free tokens decide the price: the usage row is then written
          // once, complete (no second UPDATE of it, which would double its heap and WAL writes).
          const reservation = await trx
            .deleteFrom('reservations')
            .where('request_id', '=', usage.requestId)
            .returning(['free_tokens', 'free_day'])
            .returning([money('hold_nano').as('hold')])
            .executeTakeFirst();
          const claimed =
            reservation === undefined
              ? undefined
              : {
                  holdNano: fromMoneyColumn(reservation.hold),
                  freeTokens: Number(reservation.free_tokens),
                  freeDay: Number(reservation.free_day),
                };
          const result = await settleClaimed(trx, account, usage, claimed, price, freeAllowanceTokens);
          // A duplicate rolls the whole transaction back (the delete above included): it changes nothing.
          if (result === undefined) throw new AlreadySettled();
          return result;
        });
      } catch (error) {
        if (error instanceof AlreadySettled) return { settled: false, reason: 'already_settled' };
        throw error;
      }
    },

    async grantSlice(input) {
      return db.transaction().execute(async (trx): Promise<SliceResult> => {
        const account = await lockAccount(trx, input.accountId, true);
        if (account === null) throw new Error(`No account ${input.accountId}.`);
        const hold = await trx
          .selectFrom('reservations')
          .select(['free_day', 'api_key_id'])
          .where('request_id', '=', input.requestId)
          .executeTakeFirst();
        // The limits after the account's row (lock order), as at admission: the slice is planned within each of them.
        const keyId = input.apiKeyId ?? hold?.api_key_id;
        const limits = keyId === undefined ? [] : await readApplicableLimits(trx, input.accountId, keyId);
        const {
          state,
          plan,
          limits: periods,
        } = planSlice(account, input, hold === undefined ? -1 : Number(hold.free_day), limits);
        if (hold === undefined) return { granted: false, reason: 'gone', state };
        if (!plan.granted) return { granted: false, reason: plan.reason, state };
        if (!(await takeLimitHolds(trx, input.requestId, periods, plan.holdNano))) {
          // Thrown, so the transaction rolls back whole: the account's part of the slice is not taken either.
          throw new Error("A spend limit changed under its organisation's lock.");
        }
        const limitHoldNano = periods.length === 0 ? 0n : plan.holdNano;
        const taken = await trx
          .updateTable('organisations')
          .set({
            reserved_nano: sql`reserved_nano + ${amount(plan.holdNano)}`,
            free_reserved_tokens: sql`free_reserved_tokens + ${plan.freeTokens}`,
          })
          .where('id', '=', input.accountId)
          // Belt and braces, as at admission: the conditional update refuses an overdraft even if the lock were
          // ever bypassed. Each limit's remainder is the condition of its statement above.
          .where(sql`balance_nano - reserved_nano`, '>=', amount(plan.holdNano))
          .executeTakeFirst();
        if (taken.numUpdatedRows !== 1n) throw new Error('The account changed under its lock.');
        await trx
          .updateTable('reservations')
          .set({
            hold_nano: sql`hold_nano + ${amount(plan.holdNano)}`,
            free_tokens: sql`free_tokens + ${plan.freeTokens}`,
            max_output_tokens: sql`max_output_tokens + ${plan.tokens}`,
            expires_at: sql`case when expires_at < ${input.expiresAt} then ${input.expiresAt} else expires_at end`,
            ...(input.checkpoint === undefined ? {} : checkpointColumns(input.checkpoint)),
          })
          .where('request_id', '=', input.requestId)
          .execute();
        return {
          granted: true,
          tokens: plan.tokens,
          holdNano: plan.holdNano,
          freeTokens: plan.freeTokens,
          ...(limitHoldNano === 0n ? {} : { limitHoldNano }),
        };
      });
    },

    async extendHold(requestId: string, expiresAt: number) {
      const result = await db
        .updateTable('reservations')
        .set({ expires_at: expiresAt })
        .where('request_id', '=', requestId)
        .where('expires_at', '<', expiresAt)
        .executeTakeFirst();
      if (result.numUpdatedRows > 0n) return true;
      // Not moved: either gone, or already as late (then it is still there).
      const held = await db
        .selectFrom('reservations')
        .select('request_id')
        .where('request_id', '=', requestId)
        .executeTakeFirst();
      return held !== undefined;
    },

    sweepExpiredReservations: (now, bill, limit = 100) => sweep(now, bill, limit),
  };
}

/** A checkpoint as the reservation's columns. */
function checkpointColumns(checkpoint: HoldCheckpoint) {
  return {
    model: checkpoint.model,
    family: checkpoint.family,
    stream: checkpoint.stream ? 1 : 0,
    checkpoint_input_tokens: checkpoint.inputTokens,
    checkpoint_cache_read_tokens: checkpoint.cacheReadTokens,
    checkpoint_cache_write_tokens: checkpoint.cacheWriteTokens,
    checkpoint_cache_write_1h_tokens: checkpoint.cacheWrite1hTokens,
    checkpoint_output_tokens: checkpoint.outputTokens,
    checkpoint_at: checkpoint.at,
  };
}
