import { sql, type Kysely } from 'kysely';
import type {
  AccountBalance,
  BillingRepository,
  CreditInput,
  HoldCheckpoint,
  LedgerEntry,
  LedgerKind,
  RedeemResult,
  ReserveInput,
  ReserveResult,
  OrphanBiller,
  SettleInput,
  SettleResult,
  SettlementPricer,
  SweepResult,
  UsageSummaryRow,
} from './billing-types.js';
import {
  admitted,
  decideAdmission,
  ledgerId,
  needsLedgerLine,
  settledResult,
  settledUsage,
  settlementAmounts,
  toLockedAccount,
  type ClaimedHold,
  type LockedAccount,
} from './billing-rules.js';
import { createHoldGrowth } from './hold-growth.js';
import { readKeySpend, settleKeySpend, takeKeyHold } from './key-spend-statements.js';
import type { Database } from './database-schema.js';
import { amount, fromMoneyColumn, money } from './money-sql.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage, UsageRecord } from './types.js';
import { addToDailyRollup, toUsageRow } from './usage-repository.js';

const MS_PER_DAY = 86_400_000;

/** Thrown inside the settlement transaction to roll it back when the request id was settled before. */
class AlreadySettled extends Error {}

export function createBillingRepository(db: Kysely<Database>, dialect: Storage['dialect']): BillingRepository {
  /**
   * Reads the account's money under the transaction's lock (FOR NO KEY UPDATE on PostgreSQL). Every write
   * transaction takes this lock before touching any other row of the account, so they cannot deadlock.
   */
  async function lockAccount(trx: Executor, accountId: string): Promise<LockedAccount | null> {
    let query = trx
      .selectFrom('accounts')
      .select(['free_day', 'free_used_tokens', 'free_reserved_tokens'])
      .select([money('balance_nano').as('balance'), money('reserved_nano').as('reserved')])
      .where('id', '=', accountId);
    // NO KEY UPDATE: the row's key never changes, so foreign-key checks of other rows (key-share locks) are not
    // blocked by it.
    if (dialect === 'postgres') query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    return row === undefined ? null : toLockedAccount(row);
  }

  const holdGrowth = createHoldGrowth(db, dialect, lockAccount);

  async function appendLedger(
    trx: Executor,
    entry: {
      accountId: string;
      kind: LedgerKind;
      amountNano: bigint;
      balanceAfterNano: bigint;
      idempotencyKey: string;
      requestId: string | null;
      note: string | null;
      at: number;
      unbilledTokens?: number;
      unbilledNano?: bigint;
    },
  ): Promise<boolean> {
    const result = await trx
      .insertInto('ledger_entries')
      .values({
        id: ledgerId(entry.at),
        account_id: entry.accountId,
        kind: entry.kind,
        amount_nano: amount(entry.amountNano),
        balance_after_nano: amount(entry.balanceAfterNano),
        idempotency_key: entry.idempotencyKey,
        request_id: entry.requestId,
        note: entry.note,
        created_at: entry.at,
        unbilled_tokens: entry.unbilledTokens ?? 0,
        unbilled_nano: (entry.unbilledNano ?? 0n).toString(),
      })
      .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /**
   * The settlement of a claimed hold (or none) inside the caller's transaction, the account locked: the usage row,
   * the charge (split by billing/usage-split.ts's rule within the balance and the key's spend limit; what neither
   * covers is recorded as unbilled), the hold released, the ledger entry and the daily rollup. Undefined, having
   * written nothing, when the request id was settled before (the usage row's primary key is what makes settlement
   * happen once per request id).
   */
  async function settleClaimed(
    trx: Executor,
    account: LockedAccount,
    usage: UsageRecord,
    claimed: ClaimedHold | undefined,
    price: SettlementPricer,
    freeAllowanceTokens: number,
  ): Promise<SettleResult | undefined> {
    // The key's row after the account's (lock order): its counters are only written under the account's lock.
    const key = await readKeySpend(trx, usage.apiKeyId);
    const amounts = settlementAmounts(
      account,
      claimed,
      price,
      { freeAllowanceTokens, startedAt: usage.createdAt },
      key,
    );
    const { holdNano: hold, chargedNano: charged, unbilledNano: unbilled } = amounts;
    const inserted = await trx
      .insertInto('usage_records')
      .values(toUsageRow(settledUsage(usage, amounts)))
      .onConflict((conflict) => conflict.column('request_id').doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return undefined;
    await trx
      .updateTable('accounts')
      .set({
        balance_nano: sql`balance_nano - ${amount(charged)}`,
        reserved_nano: sql`reserved_nano - ${amount(hold)}`,
        free_reserved_tokens: sql`free_reserved_tokens - ${amounts.heldFreeTokens}`,
        free_used_tokens: sql`free_used_tokens + ${amounts.freeTokensUsedToday}`,
      })
      .where('id', '=', usage.accountId)
      .execute();
    // The key's hold released and the charge counted against its spend period, in this same transaction.
    await settleKeySpend(trx, usage.apiKeyId, claimed?.keyHoldNano ?? 0n, charged, usage.createdAt);
    if (needsLedgerLine(amounts)) {
      await appendLedger(trx, {
        accountId: usage.accountId,
        kind: 'usage',
        amountNano: -charged,
        balanceAfterNano: account.balance - charged,
        idempotencyKey: `usage:${usage.requestId}`,
        requestId: usage.requestId,
        note: usage.model,
        at: usage.createdAt + usage.latencyMs,
        unbilledTokens: amounts.unbilledTokens,
        unbilledNano: unbilled,
      });
    }
    // Daily rollup (usage_daily, kept after retention deletes the usage row): one upsert in this same
    // transaction, reached only when the usage row was inserted, so it counts each request exactly once.
    await addToDailyRollup(trx, settledUsage(usage, amounts));
    return settledResult(amounts);
  }

  /**
   * Releases a claimed hold without a charge: its money and today's free tokens go back to the account, and what
   * it counted against its key's spend limit back to the key.
   */
  async function releaseClaimed(
    trx: Executor,
    account: LockedAccount | null,
    accountId: string,
    apiKeyId: string,
    claimed: ClaimedHold,
  ): Promise<void> {
    const heldFree = account !== null && claimed.freeDay === account.freeDay ? claimed.freeTokens : 0;
    const keyHold = claimed.keyHoldNano ?? 0n;
    if (keyHold !== 0n) {
      await trx
        .updateTable('api_keys')
        .set({ spend_reserved_nano: sql`spend_reserved_nano - ${amount(keyHold)}` })
        .where('id', '=', apiKeyId)
        .execute();
    }
    await trx
      .updateTable('accounts')
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
      const outcome = await writeTransaction(db, dialect, async (trx): Promise<SweepOutcome | undefined> => {
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
          .returning([money('hold_nano').as('hold'), money('key_hold_nano').as('key_hold')])
          .executeTakeFirst();
        if (row === undefined) return undefined;
        const claimed: ClaimedHold = {
          holdNano: fromMoneyColumn(row.hold),
          freeTokens: Number(row.free_tokens),
          freeDay: Number(row.free_day),
          keyHoldNano: fromMoneyColumn(row.key_hold),
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
        await releaseClaimed(trx, account, row.account_id, row.api_key_id, claimed);
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

  type SummaryGroup = 'day' | 'model' | 'key';

  /** Sums of per-request rows with created_at in [from, to), per group. */
  function summarizeRecords(
    accountId: string,
    from: number,
    to: number,
    groupBy: SummaryGroup,
  ): Promise<SummaryColumns[]> {
    // The day's length inlined as a literal: SQLite binds a JS number parameter as REAL, which would make
    // the division fractional and every row its own day.
    const group =
      groupBy === 'day'
        ? sql<string>`cast(created_at / ${sql.lit(MS_PER_DAY)} as text)`
        : groupBy === 'model'
          ? sql<string>`model`
          : sql<string>`api_key_id`;
    return db
      .selectFrom('usage_records')
      .select([group.as('grp'), sql<string>`cast(count(*) as text)`.as('requests'), ...summedColumns()])
      .where('account_id', '=', accountId)
      .where('created_at', '>=', from)
      .where('created_at', '<', to)
      .groupBy(sql`1`)
      .execute();
  }

  /** Sums of the daily rollup over the UTC day numbers [firstDay, endDay), per group. */
  function summarizeDaily(
    accountId: string,
    firstDay: number,
    endDay: number,
    groupBy: SummaryGroup,
  ): Promise<SummaryColumns[]> {
    const group =
      groupBy === 'day'
        ? sql<string>`cast(day as text)`
        : groupBy === 'model'
          ? sql<string>`model`
          : sql<string>`api_key_id`;
    return db
      .selectFrom('usage_daily')
      .select([group.as('grp'), sql<string>`cast(sum(requests) as text)`.as('requests'), ...summedColumns()])
      .where('account_id', '=', accountId)
      .where('day', '>=', firstDay)
      .where('day', '<', endDay)
      .groupBy(sql`1`)
      .execute();
  }

  return {
    async balance(accountId): Promise<AccountBalance | null> {
      const account = await lockAccount(db, accountId);
      if (account === null) return null;
      return {
        balanceNano: account.balance,
        reservedNano: account.reserved,
        freeDay: account.freeDay,
        freeUsedTokens: account.freeUsed,
        freeReservedTokens: account.freeReserved,
      };
    },

    async reserve(input: ReserveInput): Promise<ReserveResult> {
      return writeTransaction(db, dialect, async (trx) => {
        const account = await lockAccount(trx, input.accountId);
        if (account === null) throw new Error(`No account ${input.accountId}.`);
        // The key's row after the account's (lock order): its counters are only written under the account's lock.
        const key = input.keySpendLimited === true ? await readKeySpend(trx, input.apiKeyId) : null;
        const { sameDay, state, plan, key: keyHold } = decideAdmission(account, input, key);
        if (!plan.admitted) return { admitted: false, reason: plan.reason, state };
        if (keyHold !== undefined && !(await takeKeyHold(trx, input.apiKeyId, keyHold.holdNano, keyHold.period))) {
          // Thrown, so the transaction rolls back whole: the account's hold is not taken either.
          throw new Error("The key changed under its account's lock.");
        }
        const updated = await trx
          .updateTable('accounts')
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
            key_hold_nano: (keyHold?.holdNano ?? 0n).toString(),
          })
          .execute();
        return admitted(input, plan, keyHold?.holdNano ?? 0n);
      });
    },

    async settle({ usage, price, freeAllowanceTokens }: SettleInput): Promise<SettleResult> {
      try {
        return await writeTransaction(db, dialect, async (trx) => {
          const account = await lockAccount(trx, usage.accountId);
          if (account === null) throw new Error(`No account ${usage.accountId}.`);
          // The hold is claimed first because its free tokens decide the price: the usage row is then written
          // once, complete (no second UPDATE of it, which would double its heap and WAL writes).
          const reservation = await trx
            .deleteFrom('reservations')
            .where('request_id', '=', usage.requestId)
            .returning(['free_tokens', 'free_day'])
            .returning([money('hold_nano').as('hold'), money('key_hold_nano').as('key_hold')])
            .executeTakeFirst();
          const claimed =
            reservation === undefined
              ? undefined
              : {
                  holdNano: fromMoneyColumn(reservation.hold),
                  freeTokens: Number(reservation.free_tokens),
                  freeDay: Number(reservation.free_day),
                  keyHoldNano: fromMoneyColumn(reservation.key_hold),
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

    async credit(input: CreditInput) {
      return writeTransaction(db, dialect, async (trx) => {
        const account = await lockAccount(trx, input.accountId);
        if (account === null) throw new Error(`No account ${input.accountId}.`);
        // A debit takes at most what is not held by requests in flight: the balance never goes below zero.
        const available = account.balance - account.reserved;
        const applied =
          input.amountNano >= 0n
            ? input.amountNano
            : -(-input.amountNano < available ? -input.amountNano : available > 0n ? available : 0n);
        const balanceAfter = account.balance + applied;
        const booked = await appendLedger(trx, {
          accountId: input.accountId,
          kind: input.kind,
          amountNano: applied,
          balanceAfterNano: balanceAfter,
          idempotencyKey: input.idempotencyKey,
          requestId: null,
          note: input.note,
          at: input.at,
        });
        if (!booked) return { applied: false, balanceNano: account.balance };
        await trx
          .updateTable('accounts')
          .set({ balance_nano: sql`balance_nano + ${amount(applied)}` })
          .where('id', '=', input.accountId)
          .execute();
        return { applied: true, balanceNano: balanceAfter };
      });
    },

    async extendHold(requestId, expiresAt) {
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

    async releaseExpiredReservations(now, limit = 100) {
      const { released, settled } = await sweep(now, () => undefined, limit);
      return released + settled;
    },

    sweepExpiredReservations: (now, bill, limit = 100) => sweep(now, bill, limit),

    // Holds that grow while their request runs (docs/architecture.md#holds-that-grow): hold-growth.ts.
    ...holdGrowth,

    async holds(accountId, day, freeAllowanceTokens) {
      const account = await lockAccount(db, accountId);
      if (account === null) return null;
      const count = await db
        .selectFrom('reservations')
        .select(sql<string>`cast(count(*) as text)`.as('holds'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow();
      const freeSpent = account.freeDay === day ? account.freeUsed + account.freeReserved : 0;
      return {
        balanceNano: account.balance,
        reservedNano: account.reserved,
        holds: Number(count.holds),
        freeTokensLeft: Math.max(0, freeAllowanceTokens - freeSpent),
      };
    },

    async createRedemptionCodes(codes, at, expiresAt = null) {
      if (codes.length === 0) return;
      await db
        .insertInto('redemption_codes')
        .values(
          codes.map((code) => ({
            code_hash: code.codeHash,
            amount_nano: amount(code.amountNano),
            created_at: at,
            redeemed_by: null,
            redeemed_at: null,
            expires_at: expiresAt,
          })),
        )
        .execute();
    },

    async redeem(codeHash, accountId, at): Promise<RedeemResult> {
      return writeTransaction(db, dialect, async (trx) => {
        const claimed = await trx
          .updateTable('redemption_codes')
          .set({ redeemed_by: accountId, redeemed_at: at })
          .where('code_hash', '=', codeHash)
          .where('redeemed_at', 'is', null)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
          .returning(money('amount_nano').as('amount'))
          .executeTakeFirst();
        if (claimed === undefined) {
          const known = await trx
            .selectFrom('redemption_codes')
            .select(['redeemed_at', 'expires_at'])
            .where('code_hash', '=', codeHash)
            .executeTakeFirst();
          if (known === undefined) return { redeemed: false, reason: 'unknown_code' };
          return { redeemed: false, reason: known.redeemed_at === null ? 'expired' : 'already_redeemed' };
        }
        const value = fromMoneyColumn(claimed.amount);
        const account = await lockAccount(trx, accountId);
        if (account === null) throw new Error(`No account ${accountId}.`);
        await appendLedger(trx, {
          accountId,
          kind: 'redemption',
          amountNano: value,
          balanceAfterNano: account.balance + value,
          idempotencyKey: `redeem:${codeHash}`,
          requestId: null,
          note: null,
          at,
        });
        await trx
          .updateTable('accounts')
          .set({ balance_nano: sql`balance_nano + ${amount(value)}` })
          .where('id', '=', accountId)
          .execute();
        return { redeemed: true, amountNano: value, balanceNano: account.balance + value };
      });
    },

    async ledger(accountId, limit, beforeId): Promise<LedgerEntry[]> {
      // A usage line's server tools are on its usage record (kept while usage retention keeps it).
      let query = db
        .selectFrom('ledger_entries as entry')
        .leftJoin('usage_records as usage', (join) =>
          join.onRef('usage.request_id', '=', 'entry.request_id').on('entry.kind', '=', 'usage'),
        )
        .select([
          'entry.id',
          'entry.account_id',
          'entry.kind',
          'entry.idempotency_key',
          'entry.request_id',
          'entry.note',
          'entry.created_at',
          'entry.unbilled_tokens',
          'usage.web_search_requests',
          'usage.web_fetch_requests',
        ])
        .select([
          money('entry.amount_nano').as('amount'),
          money('entry.balance_after_nano').as('balance_after'),
          money('entry.unbilled_nano').as('unbilled'),
          money('usage.server_tool_nano').as('server_tool'),
        ])
        .where('entry.account_id', '=', accountId);
      if (beforeId !== undefined) query = query.where('entry.id', '<', beforeId);
      const rows = await query.orderBy('entry.id', 'desc').limit(Math.max(0, limit)).execute();
      return rows.map((row) => ({
        id: row.id,
        accountId: row.account_id,
        kind: row.kind as LedgerKind,
        amountNano: fromMoneyColumn(row.amount),
        balanceAfterNano: fromMoneyColumn(row.balance_after),
        idempotencyKey: row.idempotency_key,
        requestId: row.request_id,
        note: row.note,
        createdAt: Number(row.created_at),
        unbilledTokens: Number(row.unbilled_tokens),
        unbilledNano: fromMoneyColumn(row.unbilled),
        webSearchRequests: Number(row.web_search_requests ?? 0),
        webFetchRequests: Number(row.web_fetch_requests ?? 0),
        serverToolNano: fromMoneyColumn(row.server_tool),
      }));
    },

    async verifyLedger() {
      const rows = await db
        .selectFrom('accounts')
        .leftJoin('ledger_entries', 'ledger_entries.account_id', 'accounts.id')
        .select(['accounts.id as account_id'])
        .select([
          money('accounts.balance_nano').as('balance'),
          sql<string>`cast(coalesce(sum(ledger_entries.amount_nano), 0) as text)`.as('ledger_sum'),
        ])
        .groupBy(['accounts.id', 'accounts.balance_nano'])
        .execute();
      return rows
        .map((row) => ({
          accountId: row.account_id,
          balanceNano: fromMoneyColumn(row.balance),
          ledgerSumNano: fromMoneyColumn(row.ledger_sum),
        }))
        .filter((row) => row.balanceNano !== row.ledgerSumNano);
    },

    async usageSummary(accountId, from, to, groupBy): Promise<UsageSummaryRow[]> {
      // Whole UTC days come from the daily rollup, which outlives per-request retention (and is far fewer rows);
      // only the partial days at either edge of the range are summed from per-request rows.
      const firstWholeDay = Math.ceil(from / MS_PER_DAY);
      const endWholeDay = Math.floor(to / MS_PER_DAY);
      const parts: Promise<SummaryColumns[]>[] = [];
      if (firstWholeDay < endWholeDay) {
        parts.push(summarizeDaily(accountId, firstWholeDay, endWholeDay, groupBy));
        if (from < firstWholeDay * MS_PER_DAY)
          parts.push(summarizeRecords(accountId, from, firstWholeDay * MS_PER_DAY, groupBy));
        if (endWholeDay * MS_PER_DAY < to)
          parts.push(summarizeRecords(accountId, endWholeDay * MS_PER_DAY, to, groupBy));
      } else {
        parts.push(summarizeRecords(accountId, from, to, groupBy));
      }
      const merged = new Map<string, UsageSummaryRow>();
      for (const row of (await Promise.all(parts)).flat()) {
        const group = groupBy === 'day' ? new Date(Number(row.grp) * MS_PER_DAY).toISOString().slice(0, 10) : row.grp;
        const previous = merged.get(group);
        const current = toSummaryRow(group, row);
        merged.set(group, previous === undefined ? current : addSummaryRows(previous, current));
      }
      return [...merged.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
    },
  };
}

/** The token and cost sums both usage tables share, as text so that sums past 2^53 arrive exactly. */
function summedColumns() {
  return [
    sql<string>`cast(sum(input_tokens) as text)`.as('input_tokens'),
    sql<string>`cast(sum(cache_read_tokens) as text)`.as('cache_read_tokens'),
    sql<string>`cast(sum(cache_write_tokens) as text)`.as('cache_write_tokens'),
    sql<string>`cast(sum(cache_write_1h_tokens) as text)`.as('cache_write_1h_tokens'),
    sql<string>`cast(sum(output_tokens) as text)`.as('output_tokens'),
    sql<string>`cast(sum(reasoning_tokens) as text)`.as('reasoning_tokens'),
    sql<string>`cast(sum(cost_nano) as text)`.as('cost'),
    sql<string>`cast(sum(unbilled_tokens) as text)`.as('unbilled_tokens'),
    sql<string>`cast(sum(unbilled_nano) as text)`.as('unbilled'),
  ] as const;
}

/** One group's sums as the database returns them: text, so sums past 2^53 (cost) arrive exactly. */
interface SummaryColumns {
  grp: string;
  requests: string;
  input_tokens: string;
  cache_read_tokens: string;
  cache_write_tokens: string;
  cache_write_1h_tokens: string;
  output_tokens: string;
  reasoning_tokens: string;
  cost: string;
  unbilled_tokens: string;
  unbilled: string;
}

function toSummaryRow(group: string, row: SummaryColumns): UsageSummaryRow {
  return {
    group,
    requests: Number(row.requests),
    inputTokens: Number(row.input_tokens),
    cacheReadTokens: Number(row.cache_read_tokens),
    cacheWriteTokens: Number(row.cache_write_tokens),
    cacheWrite1hTokens: Number(row.cache_write_1h_tokens),
    outputTokens: Number(row.output_tokens),
    reasoningTokens: Number(row.reasoning_tokens),
    costNano: fromMoneyColumn(row.cost),
    unbilledTokens: Number(row.unbilled_tokens),
    unbilledNano: fromMoneyColumn(row.unbilled),
  };
}

export function addSummaryRows(sum: UsageSummaryRow, row: UsageSummaryRow): UsageSummaryRow {
  return {
    group: sum.group,
    requests: sum.requests + row.requests,
    inputTokens: sum.inputTokens + row.inputTokens,
    cacheReadTokens: sum.cacheReadTokens + row.cacheReadTokens,
    cacheWriteTokens: sum.cacheWriteTokens + row.cacheWriteTokens,
    cacheWrite1hTokens: sum.cacheWrite1hTokens + row.cacheWrite1hTokens,
    outputTokens: sum.outputTokens + row.outputTokens,
    reasoningTokens: sum.reasoningTokens + row.reasoningTokens,
    costNano: sum.costNano + row.costNano,
    unbilledTokens: sum.unbilledTokens + row.unbilledTokens,
    unbilledNano: sum.unbilledNano + row.unbilledNano,
  };
}
