import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import { ACCOUNT_LOOKUP_COLUMNS, KEY_COLUMNS, keyWithAccountRow, toApiKeyWithAccount } from '../api-key-repository.js';
import { utcMonthNumber } from '../key-permission-types.js';
import { SETTLE_KEY_SPEND_SQL, TAKE_KEY_HOLD_SQL } from '../key-spend-statements.js';
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
  toLockedKeySpend,
  type AccountMoneyRow,
  type ClaimedHold,
  type KeySpendRow,
  type LockedAccount,
} from '../billing-rules.js';
import type {
  BillingRepository,
  HoldCheckpoint,
  HoldRenewal,
  ReserveInput,
  ReserveResult,
  SettleInput,
  SettleResult,
  SliceInput,
  SliceResult,
} from '../billing-types.js';
import type { ApiKeyRepository, ApiKeyWithAccount } from '../types.js';
import { toUsageRow, utcDayNumber } from '../usage-repository.js';
import { positionalStatement, type PositionalStatement } from './positional-statement.js';
import { WriteGate } from './write-gate.js';

/**
 * The three storage calls of every API request (key lookup, reserve, settle) on SQLite, as prepared statements
 * run synchronously on the better-sqlite3 handle: each transaction is one synchronous call, BEGIN IMMEDIATE to
 * COMMIT, so nothing else can run inside it and no await, query building or connection hand-over is paid per
 * statement. Profiled on the bench: Kysely's query building and async connection handling were about 40% of the
 * gateway's CPU per request, more than SQLite's own work. The money rules are shared with the Kysely repository
 * (billing-rules.ts); the billing contract tests run against both.
 *
 * Kysely shares the same handle and holds it across awaits inside its own transactions (sign-up, rotation,
 * redemption, ...). A synchronous statement issued then would run inside that open transaction (and a nested
 * better-sqlite3 transaction would become a savepoint of it), so while the handle is in a transaction every call
 * here goes the Kysely way, which waits for the handle like any other query.
 */
export class SqliteHotPath {
  private readonly findKey: Statement;
  private readonly lockAccount: Statement;
  private readonly takeHold: Statement;
  private readonly insertHold: Statement;
  private readonly claimHold: Statement;
  private readonly insertUsage: Statement;
  private readonly applySettlement: Statement;
  private readonly insertLedger: Statement;
  private readonly addToDaily: Statement;
  private readonly readKeySpend: Statement;
  private readonly takeKeyHold: PositionalStatement;
  private readonly settleKeySpend: PositionalStatement;
  private readonly readHoldDay: Statement;
  private readonly takeSlice: Statement;
  private readonly growHold: Statement;
  private readonly renewHold: Statement;
  /** Runs a batch in one BEGIN IMMEDIATE … COMMIT, all or nothing: the usual case, where no write throws. */
  private readonly wholeBatchTransaction: (batch: readonly QueuedWrite[], values: unknown[]) => void;
  /** Runs a batch in one BEGIN IMMEDIATE … COMMIT, each write in a savepoint: for a batch in which a write threw. */
  private readonly batchTransaction: (batch: readonly QueuedWrite[], outcomes: Outcome[]) => void;
  /** One write of a batch inside a savepoint: a write that throws is rolled back alone. */
  private readonly inSavepoint: (write: () => unknown) => unknown;
  private queue: QueuedWrite[] = [];
  private flushScheduled = false;
  /** A batch is waiting for the checkpoint thread to open the write gate. */
  private waitingForGate = false;

  constructor(
    private readonly database: BetterSqliteDatabase,
    /** Told of each batch it writes (the WAL checkpoint thread follows writes). */
    private readonly onWrite: () => void = () => {},
    /** Shared with the WAL checkpoint thread, which holds it for a moment to start the WAL over (write-gate.ts). */
    private readonly gate: WriteGate = new WriteGate(),
  ) {
    // The rows every request reads come back as arrays (`raw`), made into objects here: better-sqlite3 builds an
    // object row by making each column's name a V8 string again on every row, which cost about as much as the
    // query itself on a 26-column row (micro-benchmark: an object row twice the time of an array).
    // The key lookup's ~24 columns come back as one JSON array text, parsed here: better-sqlite3 makes an array
    // row by setting each element through V8's generic property path from C++ (~900 instructions a column under
    // callgrind, on top of the value itself), so one string and one JSON.parse cost less than the columns did
    // (~12k instructions per lookup). The money columns go as text, so the JSON holds them exactly.
    this.findKey = database
      .prepare(`
      select json_array(${KEY_LOOKUP_JSON_COLUMNS})
      from api_keys k join accounts a on a.id = k.account_id
      where k.key_hash = ?`)
      .pluck(true);
    this.lockAccount = database
      .prepare(`
      select cast(balance_nano as text) as balance, cast(reserved_nano as text) as reserved, free_day, free_used_tokens,
        free_reserved_tokens
      from accounts where id = ?`)
      .raw(true);
    // The statements of every request (admission and settlement) take positional parameters (`?`, each call
    // passing its values in the order of the comment beside the statement): better-sqlite3 binds a named
    // parameter by looking its name up on the object from C++, a string made per parameter per call, which cost
    // about as much as the insert itself on a 20-column row (micro-benchmark: ~13 → ~6 µs).
    // The balance condition repeats the admission rule in SQL: belt and braces against an overdraft.
    // (hold, day, sameDay, sameDay, freeTokens, freeTokens, accountId, hold)
    this.takeHold = database.prepare(`
      update accounts set reserved_nano = reserved_nano + ?, free_day = ?,
        free_used_tokens = case when ? then free_used_tokens else 0 end,
        free_reserved_tokens = case when ? then free_reserved_tokens + ? else ? end
      where id = ? and balance_nano - reserved_nano >= ?`);
    // In column order.
    this.insertHold = database.prepare(`
      insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens,
        created_at, expires_at, key_hold_nano)
      values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.claimHold = database
      .prepare(`
      delete from reservations where request_id = ?
      returning cast(hold_nano as text) as hold, free_tokens, free_day, cast(key_hold_nano as text) as key_hold`)
      .raw(true);
    // A key's spend limit (docs/architecture.md#key-scopes-and-limits): read and written inside the same transaction as
    // the account's money.
    this.readKeySpend = database.prepare(`
      select cast(spend_limit_nano as text) as spend_limit, spend_period, spend_period_start,
        cast(spend_used_nano as text) as spend_used, cast(spend_reserved_nano as text) as spend_reserved
      from api_keys where id = ?`);
    // Shared with the Kysely repository as `:name` text, bound here by position (positional-statement.ts).
    this.takeKeyHold = positionalStatement(database, TAKE_KEY_HOLD_SQL);
    this.settleKeySpend = positionalStatement(database, SETTLE_KEY_SPEND_SQL);
    // The request id is the usage row's key: a second settlement of the same request inserts nothing. Values in
    // USAGE_COLUMNS order, taken from the row toUsageRow makes for the Kysely path too.
    this.insertUsage = database.prepare(`
      insert into usage_records (${USAGE_COLUMNS.join(', ')})
      values (${USAGE_COLUMNS.map((column) => (column.endsWith('_nano') ? 'cast(? as integer)' : '?')).join(', ')})
      on conflict (request_id) do nothing`);
    // (charged, hold, heldFree, freeUsed, accountId)
    this.applySettlement = database.prepare(`
      update accounts set balance_nano = balance_nano - ?, reserved_nano = reserved_nano - ?,
        free_reserved_tokens = free_reserved_tokens - ?, free_used_tokens = free_used_tokens + ?
      where id = ?`);
    // (id, accountId, amount, balanceAfter, idempotencyKey, requestId, note, at, unbilledTokens, unbilled)
    this.insertLedger = database.prepare(`
      insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key, request_id,
        note, created_at, unbilled_tokens, unbilled_nano)
      values (?, ?, 'usage', ?, ?, ?, ?, ?, ?, ?, ?)
      on conflict (idempotency_key) do nothing`);
    // (accountId, day, model, apiKeyId, input, cacheRead, cacheWrite, cacheWrite1h, output, reasoning, cost,
    // unbilledTokens, unbilled)
    this.addToDaily = database.prepare(`
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
    this.readHoldDay = database.prepare(`select free_day, api_key_id from reservations where request_id = ?`);
    // As at admission, the balance condition repeats the rule in SQL; a key's remaining limit is the condition of
    // takeKeyHold (TAKE_KEY_HOLD_SQL), run in the same transaction.
    this.takeSlice = database.prepare(`
      update accounts set reserved_nano = reserved_nano + @hold, free_reserved_tokens = free_reserved_tokens + @freeTokens
      where id = @accountId and balance_nano - reserved_nano >= @hold`);
    // The checkpoint columns: a null parameter keeps the column as it is (no checkpoint in this write).
    const checkpoint = `model = coalesce(@model, model), family = coalesce(@family, family), stream = coalesce(@stream, stream),
        checkpoint_input_tokens = coalesce(@inputTokens, checkpoint_input_tokens),
        checkpoint_cache_read_tokens = coalesce(@cacheReadTokens, checkpoint_cache_read_tokens),
        checkpoint_cache_write_tokens = coalesce(@cacheWriteTokens, checkpoint_cache_write_tokens),
        checkpoint_cache_write_1h_tokens = coalesce(@cacheWrite1hTokens, checkpoint_cache_write_1h_tokens),
        checkpoint_output_tokens = coalesce(@outputTokens, checkpoint_output_tokens), checkpoint_at = coalesce(@at, checkpoint_at)`;
    this.growHold = database.prepare(`
      update reservations set hold_nano = hold_nano + @hold, free_tokens = free_tokens + @freeTokens,
        max_output_tokens = max_output_tokens + @tokens, key_hold_nano = key_hold_nano + @keyHold,
        expires_at = max(expires_at, @expiresAt), ${checkpoint}
      where request_id = @requestId`);
    this.renewHold = database.prepare(`
      update reservations set expires_at = max(expires_at, @expiresAt), ${checkpoint} where request_id = @requestId`);
    this.wholeBatchTransaction = database.transaction((batch: readonly QueuedWrite[], values: unknown[]) => {
      for (const queued of batch) {
        try {
          values.push(queued.write());
        } catch (error) {
          throw new WriteFailed(error);
        }
      }
    }).immediate;
    this.inSavepoint = database.transaction((write: () => unknown) => write());
    // `.immediate`: BEGIN IMMEDIATE takes the write lock first, as the Kysely path does (transactions.ts), so another
    // process's writer waits for us (busy_timeout) instead of failing our read-then-write halfway.
    this.batchTransaction = database.transaction((batch: readonly QueuedWrite[], outcomes: Outcome[]) => {
      for (const queued of batch) {
        try {
          outcomes.push({ ok: true, value: this.inSavepoint(queued.write) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    }).immediate;
  }

  /** Replaces the hot calls of a Kysely-backed repository pair, keeping the Kysely ones for when the handle is busy. */
  install(apiKeys: ApiKeyRepository, billing: BillingRepository): void {
    const viaKysely = {
      find: apiKeys.findByHashWithAccount,
      reserve: billing.reserve,
      settle: billing.settle,
      grantSlice: billing.grantSlice,
      renewHolds: billing.renewHolds,
    };
    // Slices and the periodic batch of checkpoints join the group commit too: a grant is one synchronous
    // read-and-conditional-write, a batch one statement per hold, both inside the turn's transaction.
    billing.grantSlice = (input) =>
      this.enqueue(
        () => this.grantSliceNow(input),
        () => viaKysely.grantSlice(input),
      );
    billing.renewHolds = (renewals) =>
      this.enqueue(
        () => this.renewHoldsNow(renewals),
        () => viaKysely.renewHolds(renewals),
      );
    apiKeys.findByHashWithAccount = async (keyHash) =>
      this.database.inTransaction ? viaKysely.find(keyHash) : this.findByHash(keyHash);
    billing.reserve = (input) =>
      this.enqueue(
        () => this.reserveNow(input),
        () => viaKysely.reserve(input),
      );
    billing.settle = (input) =>
      this.enqueue<SettleResult>(
        () => this.settleNow(input),
        () => viaKysely.settle(input),
      ).catch((error: unknown) => {
        if (error instanceof AlreadySettled) return { settled: false, reason: 'already_settled' };
        throw error;
      });
  }

  /**
   * Group commit: writes queued in one event-loop turn are committed together after the turn's I/O callbacks
   * (setImmediate). Profiled: each COMMIT (its WAL page writes) cost more CPU than the statements it committed,
   * and concurrent requests touch the same pages (the account row, the tails of the usage, ledger and rollup
   * tables), so one commit for a turn's requests writes those pages once. Each caller is answered only after the
   * commit, so a settled request is as durable as before; the wait is one turn.
   *
   * A write that throws (a second settlement, a hold the account cannot cover) must fail alone. The batch first
   * runs without savepoints (a SAVEPOINT and RELEASE per write cost a third of the hot path's CPU on the bench);
   * when a write throws, that transaction rolls back whole and the batch runs again with a savepoint per write.
   * The writes are pure functions of the database's state, so running one again after a rollback is safe.
   */
  private enqueue<T>(write: () => T, viaKysely: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, viaKysely, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Commits what is queued now, unless the checkpoint thread holds the write gate: then the batch stays queued (and
   * grows) until the gate opens, one short checkpoint later, while the event loop goes on.
   */
  flush(): void {
    if (this.queue.length === 0) {
      this.flushScheduled = false;
      return;
    }
    if (this.database.inTransaction) {
      // A Kysely transaction holds the handle across awaits: queue behind it the Kysely way instead.
      for (const queued of this.takeQueue()) queued.viaKysely().then(queued.resolve, queued.reject);
      return;
    }
    if (!this.gate.tryEnter()) {
      // flushScheduled stays set: writes queued meanwhile join this batch instead of scheduling flushes of their own.
      if (!this.waitingForGate) {
        this.waitingForGate = true;
        void this.gate.whenOpen().then(() => {
          this.waitingForGate = false;
          this.flush();
        });
      }
      return;
    }
    const batch = this.takeQueue();
    try {
      this.commit(batch);
    } finally {
      this.gate.leave();
    }
  }

  /** The queued writes, handed to the one flush that writes them; later writes schedule a flush of their own. */
  private takeQueue(): QueuedWrite[] {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    return batch;
  }

  /** Commits everything queued, waiting for the write gate if the checkpoint thread holds it: before the handle closes. */
  async flushAll(): Promise<void> {
    while (this.queue.length > 0) {
      await this.gate.whenOpen();
      this.flush();
    }
  }

  private commit(batch: QueuedWrite[]): void {
    this.onWrite();
    const values: unknown[] = [];
    try {
      this.wholeBatchTransaction(batch, values);
      for (let index = 0; index < batch.length; index++) batch[index]!.resolve(values[index]);
      return;
    } catch (error) {
      if (!(error instanceof WriteFailed)) {
        // The commit itself failed (or BEGIN could not get the lock in time): nothing of the batch was written.
        for (const queued of batch) queued.reject(error);
        return;
      }
    }
    const outcomes: Outcome[] = [];
    try {
      this.batchTransaction(batch, outcomes);
    } catch (error) {
      // The commit itself failed (or BEGIN could not get the lock in time): nothing of the batch was written.
      for (const queued of batch) queued.reject(error);
      return;
    }
    batch.forEach((queued, index) => {
      const outcome = outcomes[index]!;
      if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
  }

  private findByHash(keyHash: string): ApiKeyWithAccount | null {
    const text = this.findKey.get(keyHash) as string | undefined;
    return text === undefined ? null : toApiKeyWithAccount(keyWithAccountRow(JSON.parse(text) as unknown[]));
  }

  private lock(accountId: string): LockedAccount {
    const values = this.lockAccount.get(accountId) as [string, string, number, number, number] | undefined;
    if (values === undefined) throw new Error(`No account ${accountId}.`);
    const row: AccountMoneyRow = {
      balance: values[0],
      reserved: values[1],
      free_day: values[2],
      free_used_tokens: values[3],
      free_reserved_tokens: values[4],
    };
    return toLockedAccount(row);
  }

  private reserveNow(input: ReserveInput): ReserveResult {
    const account = this.lock(input.accountId);
    const key =
      input.keySpendLimited === true
        ? toLockedKeySpend(this.readKeySpend.get(input.apiKeyId) as KeySpendRow | undefined)
        : null;
    const { sameDay, state, plan, key: keyHold } = decideAdmission(account, input, key);
    if (!plan.admitted) return { admitted: false, reason: plan.reason, state };
    const same = sameDay ? 1 : 0;
    const hold = plan.holdNano;
    if (
      this.takeHold.run(hold, input.day, same, same, plan.freeTokens, plan.freeTokens, input.accountId, hold)
        .changes !== 1
    ) {
      throw new Error('The account changed under its lock.');
    }
    if (
      keyHold !== undefined &&
      this.takeKeyHold.run({ keyId: input.apiKeyId, hold: keyHold.holdNano, period: keyHold.period }).changes !== 1
    ) {
      // Thrown inside the batch's transaction: the account's hold above is rolled back with it.
      throw new Error("The key changed under its account's lock.");
    }
    this.insertHold.run(
      input.requestId,
      input.accountId,
      input.apiKeyId,
      hold,
      plan.freeTokens,
      input.day,
      plan.maxOutputTokens,
      input.createdAt,
      input.expiresAt,
      keyHold?.holdNano ?? 0n,
    );
    return admitted(input, plan, keyHold?.holdNano ?? 0n);
  }

  private grantSliceNow(input: SliceInput): SliceResult {
    const account = this.lock(input.accountId);
    const hold = this.readHoldDay.get(input.requestId) as { free_day: number; api_key_id: string } | undefined;
    // The key's limit read in the same transaction as the account's money (docs/architecture.md#key-scopes-and-limits):
    // the slice fits both.
    const keyId = input.apiKeyId ?? hold?.api_key_id;
    const key =
      input.keySpendLimited === true && keyId !== undefined
        ? toLockedKeySpend(this.readKeySpend.get(keyId) as KeySpendRow | undefined)
        : null;
    const { state, plan } = planSlice(account, input, hold === undefined ? -1 : hold.free_day, key);
    if (hold === undefined) return { granted: false, reason: 'gone', state };
    if (!plan.granted) return { granted: false, reason: plan.reason, state };
    if (
      this.takeSlice.run({ accountId: input.accountId, hold: plan.holdNano, freeTokens: plan.freeTokens }).changes !== 1
    ) {
      throw new Error('The account changed under its lock.');
    }
    const keyHold = plan.key?.holdNano ?? 0n;
    if (
      plan.key !== undefined &&
      keyHold > 0n &&
      this.takeKeyHold.run({ keyId: hold.api_key_id, hold: keyHold, period: plan.key.period }).changes !== 1
    ) {
      // Thrown inside the batch's transaction: the account's part of the slice above is rolled back with it.
      throw new Error("The key changed under its account's lock.");
    }
    this.growHold.run({
      requestId: input.requestId,
      hold: plan.holdNano,
      freeTokens: plan.freeTokens,
      tokens: plan.tokens,
      keyHold,
      expiresAt: input.expiresAt,
      ...checkpointParameters(input.checkpoint),
    });
    return {
      granted: true,
      tokens: plan.tokens,
      holdNano: plan.holdNano,
      freeTokens: plan.freeTokens,
      ...(keyHold === 0n ? {} : { keyHoldNano: keyHold }),
    };
  }

  private renewHoldsNow(renewals: readonly HoldRenewal[]): Set<string> {
    const gone = new Set<string>();
    for (const renewal of renewals) {
      const changed = this.renewHold.run({
        requestId: renewal.requestId,
        expiresAt: renewal.expiresAt,
        ...checkpointParameters(renewal.checkpoint),
      }).changes;
      if (changed === 0) gone.add(renewal.requestId);
    }
    return gone;
  }

  private settleNow({ usage, price, freeAllowanceTokens }: SettleInput): SettleResult {
    const account = this.lock(usage.accountId);
    // Claimed first, as in the Kysely path: its free tokens decide the price, and the usage row is written once.
    const held = this.claimHold.get(usage.requestId) as HoldRow | undefined;
    const claimed: ClaimedHold | undefined =
      held === undefined
        ? undefined
        : { holdNano: BigInt(held[0]), freeTokens: held[1], freeDay: held[2], keyHoldNano: BigInt(held[3]) };
    const key = toLockedKeySpend(this.readKeySpend.get(usage.apiKeyId) as KeySpendRow | undefined);
    const amounts = settlementAmounts(
      account,
      claimed,
      price,
      { freeAllowanceTokens, startedAt: usage.createdAt },
      key,
    );
    const settled = settledUsage(usage, amounts);
    const row = toUsageRow(settled);
    // Spread, not an array: better-sqlite3 reads an array's elements through V8's generic property lookup from C++
    // (~430 instructions each under callgrind), arguments it takes as they are.
    if (this.insertUsage.run(...USAGE_COLUMNS.map((column) => row[column])).changes === 0) {
      // Settled before: undo the claim above by throwing out of the transaction, which rolls it back.
      throw new AlreadySettled();
    }
    this.applySettlement.run(
      amounts.chargedNano,
      amounts.holdNano,
      amounts.heldFreeTokens,
      amounts.freeTokensUsedToday,
      usage.accountId,
    );
    this.settleKeySpend.run({
      keyId: usage.apiKeyId,
      keyHold: claimed?.keyHoldNano ?? 0n,
      charged: amounts.chargedNano,
      day: utcDayNumber(usage.createdAt),
      month: utcMonthNumber(usage.createdAt),
    });
    if (needsLedgerLine(amounts)) {
      const at = usage.createdAt + usage.latencyMs;
      this.insertLedger.run(
        ledgerId(at),
        usage.accountId,
        -amounts.chargedNano,
        account.balance - amounts.chargedNano,
        `usage:${usage.requestId}`,
        usage.requestId,
        usage.model,
        at,
        amounts.unbilledTokens,
        amounts.unbilledNano,
      );
    }
    this.addToDaily.run(
      usage.accountId,
      utcDayNumber(usage.createdAt),
      usage.model,
      usage.apiKeyId,
      usage.inputTokens,
      usage.cacheReadTokens,
      usage.cacheWriteTokens,
      usage.cacheWrite1hTokens,
      usage.outputTokens,
      usage.reasoningTokens,
      amounts.chargedNano,
      settled.unbilledTokens ?? 0,
      settled.unbilledNano,
    );
    return settledResult(amounts);
  }
}

/** KEY_COLUMNS and ACCOUNT_LOOKUP_COLUMNS as json_array's arguments: the money columns as text (exact past 2^53). */
const KEY_LOOKUP_JSON_COLUMNS = [
  ...KEY_COLUMNS.map((column) => (column.endsWith('_nano') ? `cast(k.${column} as text)` : `k.${column}`)),
  ...ACCOUNT_LOOKUP_COLUMNS.map((column) => `a.${column}`),
].join(', ');

/** The usage_records columns the settlement writes, in the order of insertUsage's positional values. */
const USAGE_COLUMNS = [
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
function checkpointParameters(checkpoint: HoldCheckpoint | undefined) {
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

class AlreadySettled extends Error {}

/** A write of a whole-batch transaction threw: the batch runs again with a savepoint per write. */
class WriteFailed extends Error {
  constructor(cause: unknown) {
    super('A write of the batch failed.', { cause });
  }
}

interface QueuedWrite {
  /** Runs inside the batch's transaction, synchronously. */
  write: () => unknown;
  /** The same write through Kysely, for when the handle is inside another transaction at flush time. */
  viaKysely: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** claimHold's row: hold, free tokens, free day, the key's part of the hold. */
type HoldRow = [hold: string, freeTokens: number, freeDay: number, keyHold: string];
