import { sql, type Kysely } from 'kysely';
import type {
  AccountBalance,
  BillingLedgerRepository,
  CreditInput,
  LedgerEntry,
  LedgerKind,
  RedeemResult,
  UsageSummaryRow,
} from './billing-types.js';
import { ledgerId, toLockedAccount, type LockedAccount } from './billing-rules.js';
import type { Database } from './database-schema.js';
import { ACCOUNT_HELD_SQL_FUNCTION, withHeld, type HeldInMemory } from './held-in-memory.js';
import { amount, fromMoneyColumn, money } from './money-sql.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

const MS_PER_DAY = 86_400_000;

/**
 * Balances, credits, redemption codes and the ledger, on Kysely for both databases: none of it is the per-request path
 * (that is each database's billing store: sqlite/sqlite-billing-store.ts, postgres/postgres-billing-store.ts). Its
 * writes lock the wallet row first, as the stores' do (docs/architecture.md#lock-order).
 */
export function createBillingLedgerRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  /** SQLite's live holds in memory: what the account holds includes them. */
  held?: HeldInMemory,
): BillingLedgerRepository {
  /**
   * Reads the account's money under the transaction's lock (FOR NO KEY UPDATE on PostgreSQL). Every write
   * transaction takes this lock before touching any other row of the account, so they cannot deadlock. On SQLite
   * the holds in memory are added; none is taken while a transaction is open on the handle (sqlite-billing-store.ts).
   */
  async function lockAccount(trx: Executor, accountId: string): Promise<LockedAccount | null> {
    let query = trx
      .selectFrom('organisations')
      .select(['free_day', 'free_used_tokens', 'free_reserved_tokens'])
      .select([money('balance_nano').as('balance'), money('reserved_nano').as('reserved')])
      .where('id', '=', accountId);
    // NO KEY UPDATE: the row's key never changes, so foreign-key checks of other rows (key-share locks) are not
    // blocked by it.
    if (dialect === 'postgres') query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    return row === undefined ? null : withHeld(toLockedAccount(row), held?.account(accountId));
  }

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
        const updated = await trx
          .updateTable('organisations')
          .set({ balance_nano: sql`balance_nano + ${amount(applied)}` })
          .where('id', '=', input.accountId)
          // Belt and braces on SQLite: a debit never takes what live holds in memory hold, checked by the write itself.
          .$if(held !== undefined && applied < 0n, (query) =>
            query.where(
              sql<boolean>`balance_nano - reserved_nano - ${sql.raw(ACCOUNT_HELD_SQL_FUNCTION)}(id) + ${amount(applied)} >= 0`,
            ),
          )
          .executeTakeFirst();
        if (updated.numUpdatedRows !== 1n) throw new Error('The account changed under its lock.');
        return { applied: true, balanceNano: balanceAfter };
      });
    },

    async holds(accountId, day, freeAllowanceTokens) {
      const account = await lockAccount(db, accountId);
      if (account === null) return null;
      // On SQLite the rows are checkpoints (hold 0) besides a previous version's holds: only those count, with memory's.
      const count = await db
        .selectFrom('reservations')
        .select(sql<string>`cast(count(*) as text)`.as('holds'))
        .where('account_id', '=', accountId)
        .$if(held !== undefined, (query) => query.where(sql<boolean>`(hold_nano > 0 or free_tokens > 0)`))
        .executeTakeFirstOrThrow();
      const freeSpent = account.freeDay === day ? account.freeUsed + account.freeReserved : 0;
      return {
        balanceNano: account.balance,
        reservedNano: account.reserved,
        holds: Number(count.holds) + (held?.account(accountId)?.holds ?? 0),
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
          .updateTable('organisations')
          .set({ balance_nano: sql`balance_nano + ${amount(value)}` })
          .where('id', '=', accountId)
          .execute();
        return { redeemed: true, amountNano: value, balanceNano: account.balance + value };
      });
    },

    async ledger(accountId, limit, beforeId): Promise<LedgerEntry[]> {
      let query = selectLedgerEntries(db).where('entry.account_id', '=', accountId);
      if (beforeId !== undefined) query = query.where('entry.id', '<', beforeId);
      const rows = await query.orderBy('entry.id', 'desc').limit(Math.max(0, limit)).execute();
      return rows.map(toLedgerEntry);
    },

    async verifyLedger() {
      const rows = await db
        .selectFrom('organisations')
        .leftJoin('ledger_entries', 'ledger_entries.account_id', 'organisations.id')
        .select(['organisations.id as account_id'])
        .select([
          money('organisations.balance_nano').as('balance'),
          sql<string>`cast(coalesce(sum(ledger_entries.amount_nano), 0) as text)`.as('ledger_sum'),
        ])
        .groupBy(['organisations.id', 'organisations.balance_nano'])
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

/**
 * Ledger entries as `LedgerEntry` reads them, each with the server tools of its usage record (a usage line's web
 * searches and fetches live there, kept while usage retention keeps it). Callers add their own where and order.
 */
export function selectLedgerEntries(db: Kysely<Database>) {
  return db
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
    ]);
}

type LedgerEntryRow = Awaited<ReturnType<ReturnType<typeof selectLedgerEntries>['execute']>>[number];

export function toLedgerEntry(row: LedgerEntryRow): LedgerEntry {
  return {
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
  };
}
