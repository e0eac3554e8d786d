import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import {
  APPLICABLE_LIMITS_SQL,
  CHARGE_LIMIT_SQL,
  CLAIM_LIMIT_HOLDS_SQL,
  RECORD_LIMIT_HOLD_SQL,
  RELEASE_LIMIT_HOLD_SQL,
  TAKE_LIMIT_HOLD_SQL,
} from '../spend-limit-statements.js';
import type { HoldCheckpoint } from '../billing-types.js';
import type { toUsageRow } from '../usage-repository.js';
import { positionalStatement, type PositionalStatement } from './positional-statement.js';

/**
 * The SQLite billing store's prepared statements (sqlite-billing-store.ts), prepared once the schema is current (on the
 * store's first call). Each comment beside a positional statement gives the order of its values.
 */
export interface BillingStatements {
  lockAccount: Statement;
  takeHold: Statement;
  insertHold: Statement;
  claimHold: Statement;
  insertUsage: Statement;
  applySettlement: Statement;
  insertLedger: Statement;
  addToDaily: Statement;
  applicableLimits: PositionalStatement;
  takeLimitHold: PositionalStatement;
  recordLimitHold: PositionalStatement;
  claimLimitHolds: PositionalStatement;
  releaseLimitHold: PositionalStatement;
  chargeLimit: PositionalStatement;
  readHoldDay: Statement;
  takeSlice: Statement;
  growHold: Statement;
  renewHold: Statement;
  extendHold: Statement;
  holdExists: Statement;
  expiredHolds: Statement;
  claimExpiredHold: Statement;
  releaseAccountHold: Statement;
}

export function prepareBillingStatements(database: BetterSqliteDatabase): BillingStatements {
  const lockAccount = database
    .prepare(`
    select cast(balance_nano as text) as balance, cast(reserved_nano as text) as reserved, free_day, free_used_tokens,
      free_reserved_tokens
    from organisations where id = ?`)
    .raw(true);
  // The statements of every request (admission and settlement) take positional parameters (`?`, each call
  // passing its values in the order of the comment beside the statement): better-sqlite3 binds a named
  // parameter by looking its name up on the object from C++, a string made per parameter per call, which cost
  // about as much as the insert itself on a 20-column row (micro-benchmark: ~13 → ~6 µs).
  // The balance condition repeats the admission rule in SQL: belt and braces against an overdraft.
  // (hold, day, sameDay, sameDay, freeTokens, freeTokens, accountId, hold)
  const takeHold = database.prepare(`
    update organisations set reserved_nano = reserved_nano + ?, free_day = ?,
      free_used_tokens = case when ? then free_used_tokens else 0 end,
      free_reserved_tokens = case when ? then free_reserved_tokens + ? else ? end
    where id = ? and balance_nano - reserved_nano >= ?`);
  // In column order.
  const insertHold = database.prepare(`
    insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens,
      created_at, expires_at)
    values (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const claimHold = database
    .prepare(`
    delete from reservations where request_id = ?
    returning cast(hold_nano as text) as hold, free_tokens, free_day`)
    .raw(true);
  // Spend limits (docs/billing.md#spend-limits): read and written inside the same transaction as the account's money.
  // Shared with PostgreSQL's locked path as `:name` text, bound here by position (positional-statement.ts).
  const applicableLimits = positionalStatement(database, APPLICABLE_LIMITS_SQL);
  const takeLimitHold = positionalStatement(database, TAKE_LIMIT_HOLD_SQL);
  const recordLimitHold = positionalStatement(database, RECORD_LIMIT_HOLD_SQL);
  const claimLimitHolds = positionalStatement(database, CLAIM_LIMIT_HOLDS_SQL);
  const releaseLimitHold = positionalStatement(database, RELEASE_LIMIT_HOLD_SQL);
  const chargeLimit = positionalStatement(database, CHARGE_LIMIT_SQL);
  // The request id is the usage row's key: a second settlement of the same request inserts nothing. Values in
  // USAGE_COLUMNS order, taken from the row toUsageRow makes for the Kysely path too.
  const insertUsage = database.prepare(`
    insert into usage_records (${USAGE_COLUMNS.join(', ')})
    values (${USAGE_COLUMNS.map((column) => (column.endsWith('_nano') ? 'cast(? as integer)' : '?')).join(', ')})
    on conflict (request_id) do nothing`);
  // (charged, hold, heldFree, freeUsed, accountId)
  const applySettlement = database.prepare(`
    update organisations set balance_nano = balance_nano - ?, reserved_nano = reserved_nano - ?,
      free_reserved_tokens = free_reserved_tokens - ?, free_used_tokens = free_used_tokens + ?
    where id = ?`);
  // (id, accountId, amount, balanceAfter, idempotencyKey, requestId, note, at, unbilledTokens, unbilled)
  const insertLedger = database.prepare(`
    insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key, request_id,
      note, created_at, unbilled_tokens, unbilled_nano)
    values (?, ?, 'usage', ?, ?, ?, ?, ?, ?, ?, ?)
    on conflict (idempotency_key) do nothing`);
  // (accountId, day, model, apiKeyId, input, cacheRead, cacheWrite, cacheWrite1h, output, reasoning, cost,
  // unbilledTokens, unbilled)
  const addToDaily = database.prepare(`
    insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
      cache_write_tokens, cache_write_1h_tokens, output_tokens, reasoning_tokens, cost_nano, unbilled_tokens,
      unbilled_nano)
    values (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    on conflict (account_id, day, model, api_key_id) do update set requests = usage_daily.requests + 1,
      input_tokens = usage_daily.input_tokens + excluded.input_tokens,
      cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
      cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
      cache_write_1h_tokens = usage_daily.cache_write_1h_tokens + excluded.cache_write_1h_tokens,
      output_tokens = usage_daily.output_tokens + excluded.output_tokens,
      reasoning_tokens = usage_daily.reasoning_tokens + excluded.reasoning_tokens,
      cost_nano = usage_daily.cost_nano + excluded.cost_nano,
      unbilled_tokens = usage_daily.unbilled_tokens + excluded.unbilled_tokens,
      unbilled_nano = usage_daily.unbilled_nano + excluded.unbilled_nano`);
  const readHoldDay = database.prepare(`select free_day, api_key_id from reservations where request_id = ?`);
  // As at admission, the balance condition repeats the rule in SQL; each limit's remainder is the condition of
  // takeLimitHold (TAKE_LIMIT_HOLD_SQL), run in the same transaction.
  const takeSlice = database.prepare(`
    update organisations set reserved_nano = reserved_nano + @hold, free_reserved_tokens = free_reserved_tokens + @freeTokens
    where id = @accountId and balance_nano - reserved_nano >= @hold`);
  // The checkpoint columns: a null parameter keeps the column as it is (no checkpoint in this write).
  const checkpoint = `model = coalesce(@model, model), family = coalesce(@family, family), stream = coalesce(@stream, stream),
      checkpoint_input_tokens = coalesce(@inputTokens, checkpoint_input_tokens),
      checkpoint_cache_read_tokens = coalesce(@cacheReadTokens, checkpoint_cache_read_tokens),
      checkpoint_cache_write_tokens = coalesce(@cacheWriteTokens, checkpoint_cache_write_tokens),
      checkpoint_cache_write_1h_tokens = coalesce(@cacheWrite1hTokens, checkpoint_cache_write_1h_tokens),
      checkpoint_output_tokens = coalesce(@outputTokens, checkpoint_output_tokens), checkpoint_at = coalesce(@at, checkpoint_at)`;
  const growHold = database.prepare(`
    update reservations set hold_nano = hold_nano + @hold, free_tokens = free_tokens + @freeTokens,
      max_output_tokens = max_output_tokens + @tokens,
      expires_at = max(expires_at, @expiresAt), ${checkpoint}
    where request_id = @requestId`);
  const renewHold = database.prepare(`
    update reservations set expires_at = max(expires_at, @expiresAt), ${checkpoint} where request_id = @requestId`);
  // The sweeper's: candidates first (a read), then each claimed by its delete, the expiry checked again there: a hold
  // renewed meanwhile belongs to a live request.
  const extendHold = database.prepare('update reservations set expires_at = ? where request_id = ? and expires_at < ?');
  const holdExists = database.prepare('select 1 from reservations where request_id = ?').pluck(true);
  const expiredHolds = database.prepare('select request_id from reservations where expires_at < ? limit ?').pluck(true);
  // (requestId, now)
  const claimExpiredHold = database.prepare(`
      delete from reservations where request_id = ? and expires_at < ?
      returning account_id, api_key_id, free_tokens, free_day, created_at, model, family, stream,
        checkpoint_input_tokens, checkpoint_cache_read_tokens, checkpoint_cache_write_tokens,
        checkpoint_cache_write_1h_tokens, checkpoint_output_tokens, checkpoint_at,
        cast(hold_nano as text) as hold`);
  // (hold, heldFree, accountId)
  const releaseAccountHold = database.prepare(
    'update organisations set reserved_nano = reserved_nano - ?, free_reserved_tokens = free_reserved_tokens - ? where id = ?',
  );
  return {
    lockAccount,
    takeHold,
    insertHold,
    claimHold,
    insertUsage,
    applySettlement,
    insertLedger,
    addToDaily,
    applicableLimits,
    takeLimitHold,
    recordLimitHold,
    claimLimitHolds,
    releaseLimitHold,
    chargeLimit,
    readHoldDay,
    takeSlice,
    growHold,
    renewHold,
    extendHold,
    holdExists,
    expiredHolds,
    claimExpiredHold,
    releaseAccountHold,
  };
}

/** The usage_records columns the settlement writes, in the order of insertUsage's positional values. */
export const USAGE_COLUMNS = [
  'request_id',
  'account_id',
  'api_key_id',
  'model',
  'family',
  'input_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'output_tokens',
  'reasoning_tokens',
  'status',
  'stream',
  'latency_ms',
  'created_at',
  'raw_usage',
  'cost_nano',
  'free_tokens',
  'unbilled_nano',
  'route',
  'unbilled_tokens',
  'web_search_requests',
  'web_fetch_requests',
  'server_tool_nano',
  'local_input_tokens',
] as const satisfies readonly (keyof ReturnType<typeof toUsageRow>)[];

/** A checkpoint as statement parameters: all null without one (the columns keep their values). */
export function checkpointParameters(checkpoint: HoldCheckpoint | undefined) {
  return {
    model: checkpoint?.model ?? null,
    family: checkpoint?.family ?? null,
    stream: checkpoint === undefined ? null : checkpoint.stream ? 1 : 0,
    inputTokens: checkpoint?.inputTokens ?? null,
    cacheReadTokens: checkpoint?.cacheReadTokens ?? null,
    cacheWriteTokens: checkpoint?.cacheWriteTokens ?? null,
    cacheWrite1hTokens: checkpoint?.cacheWrite1hTokens ?? null,
    outputTokens: checkpoint?.outputTokens ?? null,
    at: checkpoint?.at ?? null,
  };
}
