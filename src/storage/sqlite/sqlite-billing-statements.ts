import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import {
  APPLICABLE_LIMITS_SQL,
  CHARGE_LIMIT_SQL,
  CLAIM_LIMIT_HOLDS_SQL,
  RELEASE_LIMIT_HOLD_SQL,
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
  claimHold: Statement;
  insertUsage: Statement;
  applySettlement: Statement;
  insertLedger: Statement;
  addToDaily: Statement;
  applicableLimits: PositionalStatement;
  claimLimitHolds: PositionalStatement;
  releaseLimitHold: PositionalStatement;
  chargeLimit: PositionalStatement;
  writeCheckpoint: Statement;
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
  // The statements of every settlement take positional parameters (`?`, each call passing its values in the order
  // of the comment beside the statement): better-sqlite3 binds a named parameter by looking its name up on the object
  // from C++, a string made per parameter per call, which cost about as much as the insert itself on a 20-column row
  // (micro-benchmark: ~13 → ~6 µs). Admission and slices write nothing: their holds live in memory
  // (memory-hold-book.ts); `reservations` keeps checkpoints (hold 0) and holds a previous version left.
  const claimHold = database
    .prepare(`
    delete from reservations where request_id = ?
    returning cast(hold_nano as text) as hold, free_tokens, free_day`)
    .raw(true);
  // Spend limits (docs/billing.md#spend-limits): read and written inside the same transaction as the account's money.
  // Shared with PostgreSQL's locked path as `:name` text, bound here by position (positional-statement.ts).
  const applicableLimits = positionalStatement(database, APPLICABLE_LIMITS_SQL);
  const claimLimitHolds = positionalStatement(database, CLAIM_LIMIT_HOLDS_SQL);
  const releaseLimitHold = positionalStatement(database, RELEASE_LIMIT_HOLD_SQL);
  const chargeLimit = positionalStatement(database, CHARGE_LIMIT_SQL);
  // The request id is the usage row's key: a second settlement of the same request inserts nothing. Values in
  // USAGE_COLUMNS order, taken from the row toUsageRow makes for the Kysely path too.
  const insertUsage = database.prepare(`
    insert into usage_records (${USAGE_COLUMNS.join(', ')})
    values (${USAGE_COLUMNS.map((column) => (column.endsWith('_nano') ? 'cast(? as integer)' : '?')).join(', ')})
    on conflict (request_id) do nothing`);
  // The free counters are written whole, as the settlement computed them from the row read in this transaction: a
  // live hold of a new day moves them to that day here, its admission having written nothing.
  // (charged, storedHold, freeDay, freeUsed, freeReserved, accountId)
  const applySettlement = database.prepare(`
    update organisations set balance_nano = balance_nano - ?, reserved_nano = reserved_nano - ?, free_day = ?,
      free_used_tokens = ?, free_reserved_tokens = ?
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
  // A live request's checkpoint (hold 0: its hold is in memory), never for a request already settled: a checkpoint
  // queued behind its settlement in one batch must not leave a row the sweeper would take for an orphan.
  // (requestId, accountId, apiKeyId, freeDay, maxOutputTokens, createdAt, expiresAt, ...CHECKPOINT_COLUMNS, requestId)
  const writeCheckpoint = database.prepare(`
    insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens,
      created_at, expires_at, ${CHECKPOINT_COLUMNS.join(', ')})
    select ?, ?, ?, 0, 0, ?, ?, ?, ?, ${CHECKPOINT_COLUMNS.map(() => '?').join(', ')}
    where not exists (select 1 from usage_records where request_id = ?)
    on conflict (request_id) do update set max_output_tokens = excluded.max_output_tokens,
      expires_at = excluded.expires_at, ${CHECKPOINT_COLUMNS.map((column) => `${column} = excluded.${column}`).join(', ')}`);
  // The sweeper's: candidates first (a read), then each claimed by its delete, the expiry checked again there.
  const expiredHolds = database.prepare('select request_id from reservations where expires_at < ?').pluck(true);
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
    claimHold,
    insertUsage,
    applySettlement,
    insertLedger,
    addToDaily,
    applicableLimits,
    claimLimitHolds,
    releaseLimitHold,
    chargeLimit,
    writeCheckpoint,
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

/** The checkpoint columns of `reservations`, in the order `checkpointValues` gives them. */
const CHECKPOINT_COLUMNS = [
  'model',
  'family',
  'stream',
  'checkpoint_input_tokens',
  'checkpoint_cache_read_tokens',
  'checkpoint_cache_write_tokens',
  'checkpoint_cache_write_1h_tokens',
  'checkpoint_output_tokens',
  'checkpoint_at',
] as const;

/** A checkpoint as writeCheckpoint's values, in CHECKPOINT_COLUMNS order. */
export function checkpointValues(checkpoint: HoldCheckpoint): (string | number)[] {
  return [
    checkpoint.model,
    checkpoint.family,
    checkpoint.stream ? 1 : 0,
    checkpoint.inputTokens,
    checkpoint.cacheReadTokens,
    checkpoint.cacheWriteTokens,
    checkpoint.cacheWrite1hTokens,
    checkpoint.outputTokens,
    checkpoint.at,
  ];
}

/** claimHold's row: hold, free tokens, free day. */
export type HoldRow = [hold: string, freeTokens: number, freeDay: number];

/** claimExpiredHold's row. */
export interface ExpiredHoldRow {
  account_id: string;
  api_key_id: string;
  free_tokens: number;
  free_day: number;
  created_at: number;
  model: string | null;
  family: string | null;
  stream: number | null;
  checkpoint_input_tokens: number;
  checkpoint_cache_read_tokens: number;
  checkpoint_cache_write_tokens: number;
  checkpoint_cache_write_1h_tokens: number;
  checkpoint_output_tokens: number;
  checkpoint_at: number | null;
  hold: string;
}

/** The state a checkpoint column set holds: null when the request had delivered nothing when last written. */
export function checkpointOf(row: ExpiredHoldRow): HoldCheckpoint | null {
  if (row.checkpoint_at === null || row.model === null || row.family === null) return null;
  return {
    model: row.model,
    family: row.family,
    stream: row.stream === 1,
    inputTokens: row.checkpoint_input_tokens,
    cacheReadTokens: row.checkpoint_cache_read_tokens,
    cacheWriteTokens: row.checkpoint_cache_write_tokens,
    cacheWrite1hTokens: row.checkpoint_cache_write_1h_tokens,
    outputTokens: row.checkpoint_output_tokens,
    at: row.checkpoint_at,
  };
}
