import type pg from 'pg';
import {
  KEY_COLUMNS,
  KEY_LOOKUP_COLUMNS,
  KEY_LOOKUP_WIDTH,
  keyWithAccountRow,
  toApiKeyWithAccount,
} from '../api-key-repository.js';
import {
  admitted,
  decideAdmission,
  ledgerId,
  toLockedAccount,
  type AccountMoneyRow,
  type AdmissionDecision,
} from '../billing-rules.js';
import type {
  BillingRepository,
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
import { utcMonthNumber } from '../key-permission-types.js';
import { GRANT_SLICE, GRANT_SLICE_WITH_KEY, RENEW_HOLDS } from './postgres-hold-growth-statements.js';
import { KeptConnections } from './kept-connections.js';
import { PostgresKeyLookupBatcher, type KeyLookupRow } from './postgres-key-lookup-batch.js';
import { PostgresWriteBatcher } from './postgres-write-batch.js';

const MS_PER_DAY = 86_400_000;

/**
 * Admission and settlement on PostgreSQL in few round trips (at most 3 per request with the key lookup).
 * The Kysely repository does each in a transaction of 5 and 8 statements (BEGIN, lock, writes, COMMIT), one
 * round trip each. Here:
 * - the key lookup also reads the account's money (the same round trip), which the caller passes back as the
 *   admission's hint;
 * - reserve plans from that hint (or reads the account without a lock), and takes the hold with one conditional statement that
 *   re-checks, against the row as it is then, that the hold and the free tokens still fit (the same condition the
 *   locked path enforces). A plan made on a slightly older state is only ever more cautious than one made under
 *   the lock would be, or no longer fits: then, and for every refusal, the locked path decides.
 * - settle is one statement: the account row locked first, the hold claimed, the usage row, the charge (capped at
 *   the balance), the ledger entry and the daily rollup, all or nothing, exactly once per request id. The price
 *   depends on the free tokens the claimed hold carries (of whichever day it was taken; only a hold of the
 *   account's current day moves its free counters), which JS computes: the caller passes the free tokens the
 *   hold was taken with; if the row says otherwise the statement writes nothing and the locked path settles.
 * The money rules are those of billing-rules.ts, written in SQL: the billing contract tests run against both.
 * Under load the holds, slices and settlements of one event-loop turn go to the server together, as one transaction
 * in one round trip (postgres-write-batch.ts), and the turn's key lookups as one read (postgres-key-lookup-batch.ts).
 */
export class PostgresHotPath {
  /** Holds, slices and settlements of this instance, sent together (postgres-write-batch.ts). */
  readonly writes: PostgresWriteBatcher;
  private readonly keys: PostgresKeyLookupBatcher;
  /** The batchers' connections, kept checked out between statements (kept-connections.ts). */
  private readonly connections: KeptConnections;

  constructor(private readonly pool: pg.Pool) {
    this.connections = new KeptConnections(pool);
    this.writes = new PostgresWriteBatcher(this.connections);
    this.keys = new PostgresKeyLookupBatcher(this.connections, FIND_KEYS, FIND_KEYS_HASH_COLUMN);
  }

  /** Gives the kept connections back to the pool, whose `end` waits for them: call it before ending the pool. */
  close(): void {
    this.connections.close();
  }

  install(apiKeys: ApiKeyRepository, billing: BillingRepository): void {
    apiKeys.findByHashWithAccount = (keyHash) => this.findByHash(keyHash);
    const viaTransaction = { reserve: billing.reserve, settle: billing.settle };
    billing.reserve = async (input) => (await this.reserve(input)) ?? viaTransaction.reserve(input);
    billing.settle = async (input) => (await this.settle(input)) ?? viaTransaction.settle(input);
    billing.renewHolds = (renewals) => this.renewHolds(renewals);
    const viaLockedTransaction = billing.grantSlice;
    billing.grantSlice = async (input) => (await this.grantSlice(input)) ?? viaLockedTransaction(input);
  }

  /**
   * A whole slice in one statement (docs/architecture.md#holds-that-grow): the account row locked first, the hold grown
   * only if the account can pay for the whole slice (free tokens first), the account's reserved money and free tokens
   * raised by what the hold grew, and its checkpoint written. Undefined when it wrote nothing (the account cannot pay
   * for the whole slice, or the hold is gone): the locked transaction then grants what is left, or refuses with the
   * state.
   */
  private async grantSlice(input: SliceInput): Promise<SliceResult | undefined> {
    const checkpoint = input.checkpoint;
    // A key with a spend limit: the same statement with the key's row as a second condition (GRANT_SLICE_WITH_KEY).
    const at = input.at ?? input.day * MS_PER_DAY;
    const keyed = input.keySpendLimited === true;
    const result = await this.writes.run({
      accountId: input.accountId,
      name: keyed ? 'grant_slice_with_key' : 'grant_slice',
      text: keyed ? GRANT_SLICE_WITH_KEY : GRANT_SLICE,
      values: [
        input.accountId,
        input.requestId,
        input.day,
        input.tokens,
        input.freeAllowanceTokens,
        input.outputPriceNano.toString(),
        input.expiresAt,
        checkpoint?.model ?? null,
        checkpoint?.family ?? null,
        checkpoint === undefined ? null : checkpoint.stream ? 1 : 0,
        checkpoint?.inputTokens ?? null,
        checkpoint?.cacheReadTokens ?? null,
        checkpoint?.cacheWriteTokens ?? null,
        checkpoint?.outputTokens ?? null,
        checkpoint?.at ?? null,
        checkpoint?.cacheWrite1hTokens ?? null,
        ...(keyed ? [Math.floor(at / MS_PER_DAY), utcMonthNumber(at)] : []),
      ],
    });
    const row = result.rows[0] as { free: string } | undefined;
    if (row === undefined) return undefined;
    const freeTokens = Number(row.free);
    const holdNano = BigInt(input.tokens - freeTokens) * input.outputPriceNano;
    return {
      granted: true,
      tokens: input.tokens,
      holdNano,
      freeTokens,
      ...(keyed && holdNano !== 0n ? { keyHoldNano: holdNano } : {}),
    };
  }

  /**
   * An instance's periodic batch in one statement (one round trip, whatever the number of live holds): each hold's
   * expiry moved forward and, where given, its checkpoint written. It locks only the holds' own rows, which no
   * other instance writes (a sweeper claims a hold only once expired, after locking its account), so it cannot
   * deadlock with a settlement.
   */
  private async renewHolds(renewals: readonly HoldRenewal[]): Promise<Set<string>> {
    if (renewals.length === 0) return new Set();
    const column = <T>(pick: (renewal: HoldRenewal) => T) => renewals.map(pick);
    const result = await this.pool.query<{ request_id: string }>({
      name: 'tollgate_renew_holds',
      text: RENEW_HOLDS,
      values: [
        column((renewal) => renewal.requestId),
        column((renewal) => String(renewal.expiresAt)),
        column((renewal) => renewal.checkpoint?.model ?? null),
        column((renewal) => renewal.checkpoint?.family ?? null),
        column((renewal) => (renewal.checkpoint === undefined ? null : renewal.checkpoint.stream ? 1 : 0)),
        column((renewal) => renewal.checkpoint?.inputTokens ?? null),
        column((renewal) => renewal.checkpoint?.cacheReadTokens ?? null),
        column((renewal) => renewal.checkpoint?.cacheWriteTokens ?? null),
        column((renewal) => renewal.checkpoint?.outputTokens ?? null),
        column((renewal) => (renewal.checkpoint === undefined ? null : String(renewal.checkpoint.at))),
        column((renewal) => renewal.checkpoint?.cacheWrite1hTokens ?? null),
      ],
    });
    const held = new Set(result.rows.map((row) => row.request_id));
    return new Set(renewals.map((renewal) => renewal.requestId).filter((requestId) => !held.has(requestId)));
  }

  /** The key and its account, with the account's money read in the same round trip (the admission's hint). */
  private async findByHash(keyHash: string): Promise<ApiKeyWithAccount | null> {
    const columns = await this.keys.find(keyHash);
    if (columns === undefined) return null;
    return { ...toApiKeyWithAccount(keyWithAccountRow(columns)), money: toLockedAccount(accountMoneyOf(columns)) };
  }

  /**
   * Undefined: not decided here; the locked path decides. A key with a spend limit is planned from the key's
   * counters as read with it and taken with TAKE_HOLD_WITH_KEY, one statement that holds against both.
   */
  private async reserve(input: ReserveInput): Promise<ReserveResult | undefined> {
    const keyHint = input.keySpendLimited === true ? input.keySpendHint : undefined;
    if (input.keySpendLimited === true && keyHint === undefined) return undefined;
    let account = input.accountHint;
    if (account === undefined) {
      const read = await this.pool.query<AccountMoneyRow>({
        name: 'tollgate_read_account_money',
        text: READ_ACCOUNT_MONEY,
        values: [input.accountId],
      });
      const row = read.rows[0];
      if (row === undefined) return undefined;
      account = toLockedAccount(row);
    }
    let decision: AdmissionDecision;
    try {
      decision = decideAdmission(account, input, keyHint ?? null);
    } catch {
      return undefined;
    }
    const { plan } = decision;
    if (!plan.admitted) return undefined;
    // The same hold either way; a key with a spend limit adds its period and takes its part in the same statement.
    const values: unknown[] = [
      input.accountId,
      plan.holdNano.toString(),
      input.day,
      plan.freeTokens,
      input.freeAllowanceTokens,
      input.requestId,
      input.apiKeyId,
      plan.maxOutputTokens,
      input.createdAt,
      input.expiresAt,
    ];
    const keyHold = keyHint === undefined ? undefined : { ...decision.key!, hintPeriod: keyHint.period };
    const taken = await this.writes.run(
      keyHold === undefined
        ? { accountId: input.accountId, name: 'take_hold', text: TAKE_HOLD, values }
        : {
            accountId: input.accountId,
            name: 'take_hold_with_key',
            text: TAKE_HOLD_WITH_KEY,
            values: [...values, keyHold.period, keyHold.hintPeriod],
          },
    );
    if (taken.rowCount !== 1) return undefined;
    return keyHold === undefined ? admitted(input, plan) : admitted(input, plan, keyHold.holdNano);
  }

  /**
   * The usage split by the pricer as if money were no limit, with the free tokens of the hold: the split the rule
   * gives whenever the statement finds the charge within the balance and the key's limit, and no more free tokens
   * left to the request's day than its hold carries (SETTLE's `ok`). Otherwise nothing is written and the locked
   * transaction splits it within what is there.
   */
  private async settle({
    usage,
    price,
    heldFreeTokens,
    freeAllowanceTokens,
  }: SettleInput): Promise<SettleResult | undefined> {
    let expectedFree = heldFreeTokens;
    if (expectedFree === undefined) {
      const held = await this.pool.query<{ free_tokens: number }>({
        name: 'tollgate_read_hold',
        text: READ_HOLD,
        values: [usage.requestId],
      });
      // No hold (swept, or settled before): the locked transaction settles it, or finds it settled.
      if (held.rows[0] === undefined) return undefined;
      expectedFree = Number(held.rows[0].free_tokens);
    }
    const split = price({ freeTokens: expectedFree, moneyNano: [NO_MONEY_LIMIT] });
    // One more free token would be used: what is left of the day's allowance beyond the hold would change the split.
    const wantsMoreFree =
      price({ freeTokens: expectedFree + 1, moneyNano: [NO_MONEY_LIMIT] }).freeTokens > split.freeTokens;
    const row = toUsageRow(usage);
    const at = usage.createdAt + usage.latencyMs;
    const result = await this.writes.run({
      accountId: row.account_id,
      name: 'settle',
      text: SETTLE,
      values: [
        row.account_id,
        row.request_id,
        expectedFree,
        split.billedNano.toString(),
        split.freeTokens,
        wantsMoreFree,
        row.api_key_id,
        row.model,
        row.family,
        row.input_tokens,
        row.cache_read_tokens,
        row.cache_write_tokens,
        row.output_tokens,
        row.reasoning_tokens,
        row.status,
        row.stream,
        row.latency_ms,
        row.created_at,
        row.raw_usage,
        ledgerId(at),
        at,
        utcDayNumber(usage.createdAt),
        row.route,
        row.unbilled_tokens,
        utcMonthNumber(usage.createdAt),
        row.cache_write_1h_tokens,
        freeAllowanceTokens,
        row.web_search_requests,
        row.web_fetch_requests,
        row.server_tool_nano,
        row.local_input_tokens,
      ],
    });
    const outcome = result.rows[0] as SettleRow | undefined;
    if (outcome === undefined || !outcome.consistent) return undefined;
    if (Number(outcome.inserted) === 0) return { settled: false, reason: 'already_settled' };
    return {
      settled: true,
      chargedNano: BigInt(outcome.charged),
      unbilledNano: 0n,
      unbilledTokens: 0,
      freeTokensUsed: Number(outcome.free_used),
    };
  }
}

/** The largest bigint PostgreSQL stores: the money room of a split that money does not limit. */
const NO_MONEY_LIMIT = 2n ** 63n - 1n;

interface SettleRow {
  consistent: boolean;
  inserted: number | string;
  charged: string;
  unbilled: string;
  free_used: number | string;
}

/**
 * The key rows for the key hashes of one event-loop turn ($1 text[]): one round trip however many requests arrive
 * together. Read as arrays (postgres-key-lookup-batch.ts): KEY_LOOKUP_COLUMNS, then the account's money.
 */
const FIND_KEYS = `
  select ${KEY_LOOKUP_COLUMNS},
    cast(a.balance_nano as text), cast(a.reserved_nano as text), a.free_day, a.free_used_tokens, a.free_reserved_tokens
  from api_keys k join accounts a on a.id = k.account_id
  where k.key_hash = any($1::text[])`;

/** Where FIND_KEYS selects `key_hash`. */
const FIND_KEYS_HASH_COLUMN = KEY_COLUMNS.indexOf('key_hash');

/** The account's money columns of a FIND_KEYS row, which follow KEY_LOOKUP_COLUMNS. */
function accountMoneyOf(v: KeyLookupRow): AccountMoneyRow {
  const at = KEY_LOOKUP_WIDTH;
  return {
    balance: v[at] as string,
    reserved: v[at + 1] as string,
    free_day: v[at + 2] as number | string,
    free_used_tokens: v[at + 3] as number | string,
    free_reserved_tokens: v[at + 4] as number | string,
  };
}

const READ_ACCOUNT_MONEY = `
  select cast(balance_nano as text) as balance, cast(reserved_nano as text) as reserved, free_day, free_used_tokens,
    free_reserved_tokens
  from accounts where id = $1`;

const READ_HOLD = `select free_tokens from reservations where request_id = $1`;

/** $1 account, $2 hold, $3 day, $4 free tokens, $5 daily allowance, $6 request, $7 key, $8 max output, $9 created, $10 expires. */
const TAKE_HOLD = `
  with held as (
    update accounts set
      reserved_nano = reserved_nano + $2::bigint,
      free_used_tokens = case when free_day = $3 then free_used_tokens else 0 end,
      free_reserved_tokens = case when free_day = $3 then free_reserved_tokens + $4::bigint else $4::bigint end,
      free_day = $3
    where id = $1
      and balance_nano - reserved_nano >= $2::bigint
      and ($4::bigint = 0 or (case when free_day = $3 then free_used_tokens + free_reserved_tokens else 0 end) + $4::bigint <= $5::bigint)
    returning id
  )
  insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens, created_at, expires_at)
  select $6, id, $7, $2::bigint, $4::bigint, $3, $8, $9, $10 from held
  returning request_id`;

/**
 * TAKE_HOLD for a key with a spend limit, still one statement (a key limit is money like the balance):
 * - `acct` locks the account row, returning it only if the hold and the free tokens still fit (a locked row is
 *   re-read and the condition re-checked on its newest version after the wait: READ COMMITTED's rule for
 *   FOR … UPDATE). The account row is locked first, as in every other write of the account's rows.
 * - `keyheld` adds the hold to the key's counters only if it fits under the limit (limit ≥ spent this period +
 *   held + hold), and only once `acct` holds the lock; its row is re-checked the same way when it changed.
 * - `held` takes the hold on the account only if `keyheld` did: so either both counters move or neither does,
 *   and the statement writes nothing (the locked path then decides) when either no longer fits.
 * A hold that grows by a slice during the reply needs the same three steps with the slice as the amount (and
 * the reservation's hold_nano and key_hold_nano raised by it, `keyheld` only when key_hold_nano > 0).
 * $1 account, $2 hold, $3 day, $4 free tokens, $5 daily allowance, $6 request, $7 key, $8 max output, $9 created,
 * $10 expires, $11 the key's period number now, $12 its period name (the plan's; a changed period writes nothing).
 */
const TAKE_HOLD_WITH_KEY = `
  with acct as (
    select id from accounts
    where id = $1
      and balance_nano - reserved_nano >= $2::bigint
      and ($4::bigint = 0 or (case when free_day = $3 then free_used_tokens + free_reserved_tokens else 0 end) + $4::bigint <= $5::bigint)
    for no key update
  ),
  keyheld as (
    update api_keys set
      spend_reserved_nano = spend_reserved_nano + $2::bigint,
      spend_used_nano = case when spend_period_start >= $11::bigint then spend_used_nano else 0 end,
      spend_period_start = greatest(spend_period_start, $11::bigint)
    where id = $7 and exists (select 1 from acct)
      and spend_limit_nano is not null and spend_period = $12
      and (case when spend_period_start >= $11::bigint then spend_used_nano else 0 end) + spend_reserved_nano + $2::bigint <= spend_limit_nano
    returning id
  ),
  held as (
    update accounts set
      reserved_nano = reserved_nano + $2::bigint,
      free_used_tokens = case when free_day = $3 then free_used_tokens else 0 end,
      free_reserved_tokens = case when free_day = $3 then free_reserved_tokens + $4::bigint else $4::bigint end,
      free_day = $3
    where id = $1 and exists (select 1 from keyheld)
    returning id
  )
  insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens, created_at, expires_at, key_hold_nano)
  select $6, id, $7, $2::bigint, $4::bigint, $3, $8, $9, $10, $2::bigint from held
  returning request_id`;

/**
 * $1 account, $2 request, $3 free tokens the hold was taken with, $4 the charge and $5 the free tokens of the split with
 * them (money no limit), $6 the usage has more tokens than those free tokens, $7…$19 the usage row, $20 ledger id,
 * $21 ledger time, $22 UTC day, $23 the usage row's route, $24 unbilled tokens (the vendor's overrun), $25 UTC month
 * number, $26 1-hour cache writes, $27 the daily free allowance, $28/$29/$30 web searches, web fetches and their
 * cost. `ok` says whether that split is the rule's here: the
 * hold is there with those free tokens, the charge fits the balance and what the key's current limit leaves of its
 * request's period (read under a lock, after the account's: not the hold, which a lowered limit no longer backs), and
 * no free tokens of the hold's day are left beyond the hold when they would have priced more. If not, nothing is
 * written and the locked transaction splits the usage (billing-rules.ts's settlementRoom, the same rule). `keyspend`
 * is SETTLE_KEY_SPEND_SQL of key-spend-statements.ts: the key's counters after the account's row.
 * Every CTE reaches `acct` before it writes, so the account row is locked first, as in every other write
 * transaction (no deadlock with the sweeper, which also locks the account before claiming a hold).
 */
const SETTLE = `
  with acct as (
    select balance_nano, free_day, free_used_tokens, free_reserved_tokens from accounts where id = $1 for no key update
  ),
  keylimit as (
    select spend_limit_nano as limit_nano, spend_used_nano as used_nano, spend_period_start as period_start,
      case spend_period when 'day' then $22::bigint when 'month' then $25::bigint else 0 end as period
    from api_keys
    where id = $7 and spend_limit_nano is not null and spend_period in ('day', 'month', 'total')
      and exists (select 1 from acct)
    for no key update
  ),
  ok as (
    select exists (
      select 1 from reservations r, acct a
      where r.request_id = $2 and r.free_tokens = $3::bigint
        and $4::bigint <= a.balance_nano
        and (not $6::boolean or r.free_day <> a.free_day or a.free_used_tokens + a.free_reserved_tokens >= $27::bigint)
    ) and not exists (
      select 1 from keylimit k
      where k.period_start <= k.period
        and $4::bigint > k.limit_nano - case when k.period_start = k.period then k.used_nano else 0 end
    ) as consistent
  ),
  claimed as (
    delete from reservations where request_id = $2 and (select consistent from ok)
    returning hold_nano, free_tokens, free_day, key_hold_nano
  ),
  final as (
    select c.hold_nano as hold, c.key_hold_nano as key_hold,
      case when c.free_day = a.free_day then c.free_tokens else 0 end as held_free,
      $5::bigint as free_used,
      case when c.free_day = a.free_day then $5::bigint else 0 end as free_used_today,
      $4::bigint as charged, 0::bigint as unbilled
    from claimed c, acct a
  ),
  inserted as (
    insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens, cache_read_tokens,
      cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms, created_at, raw_usage, cost_nano,
      free_tokens, unbilled_nano, route, unbilled_tokens, cache_write_1h_tokens, web_search_requests, web_fetch_requests,
      server_tool_nano, local_input_tokens)
    select $2, $1, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, f.charged, f.free_used, f.unbilled, $23, $24,
      $26, $28, $29, $30::bigint, $31::integer
    from final f where (select consistent from ok)
    on conflict (request_id) do nothing
    returning request_id
  ),
  updated as (
    update accounts a set
      balance_nano = a.balance_nano - f.charged,
      reserved_nano = a.reserved_nano - f.hold,
      free_reserved_tokens = a.free_reserved_tokens - f.held_free,
      free_used_tokens = a.free_used_tokens + f.free_used_today
    from final f
    where a.id = $1 and exists (select 1 from inserted)
    returning a.balance_nano
  ),
  ledger as (
    insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key, request_id, note, created_at)
    select $20, $1, 'usage', -f.charged, u.balance_nano, 'usage:' || $2, $2, $8, $21
    from final f, updated u where f.charged > 0
    on conflict (idempotency_key) do nothing
    returning id
  ),
  daily as (
    insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
      cache_write_tokens, cache_write_1h_tokens, output_tokens, reasoning_tokens, cost_nano, unbilled_tokens, unbilled_nano)
    select $1, $22, $8, $7, 1, $10, $11, $12, $26, $13, $14, f.charged, $24, f.unbilled
    from final f where exists (select 1 from inserted)
    on conflict (account_id, day, model, api_key_id) do update set
      requests = usage_daily.requests + 1,
      input_tokens = usage_daily.input_tokens + excluded.input_tokens,
      cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
      cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
      cache_write_1h_tokens = usage_daily.cache_write_1h_tokens + excluded.cache_write_1h_tokens,
      output_tokens = usage_daily.output_tokens + excluded.output_tokens,
      reasoning_tokens = usage_daily.reasoning_tokens + excluded.reasoning_tokens,
      cost_nano = usage_daily.cost_nano + excluded.cost_nano,
      unbilled_tokens = usage_daily.unbilled_tokens + excluded.unbilled_tokens,
      unbilled_nano = usage_daily.unbilled_nano + excluded.unbilled_nano
    returning day
  ),
  keyspend as (
    update api_keys set
      spend_reserved_nano = spend_reserved_nano - f.key_hold,
      spend_used_nano = case
        when spend_limit_nano is null then spend_used_nano
        when spend_period_start = (case spend_period when 'day' then $22::bigint when 'month' then $25::bigint else 0 end) then spend_used_nano + f.charged
        when spend_period_start < (case spend_period when 'day' then $22::bigint when 'month' then $25::bigint else 0 end) then f.charged
        else spend_used_nano end,
      spend_period_start = case
        when spend_limit_nano is not null and spend_period_start < (case spend_period when 'day' then $22::bigint when 'month' then $25::bigint else 0 end)
          then (case spend_period when 'day' then $22::bigint when 'month' then $25::bigint else 0 end)
        else spend_period_start end
    from final f
    where api_keys.id = $7 and exists (select 1 from inserted) and (api_keys.spend_limit_nano is not null or f.key_hold <> 0)
    returning api_keys.id
  )
  select (select consistent from ok) as consistent, (select count(*) from inserted) as inserted,
    cast(f.charged as text) as charged, cast(f.unbilled as text) as unbilled, f.free_used
  from final f`;
