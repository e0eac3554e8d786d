import type { Kysely } from 'kysely';
import type pg from 'pg';
import {
  admitted,
  decideAdmission,
  ledgerId,
  toLockedAccount,
  type AccountMoneyRow,
  type AdmissionDecision,
} from '../billing-rules.js';
import type {
  HoldRenewal,
  OrphanBiller,
  OwnedBillingStore,
  ReserveInput,
  ReserveResult,
  SettleInput,
  SettleResult,
  SliceInput,
  SliceResult,
  SweepResult,
} from '../billing-types.js';
import type { Database } from '../database-schema.js';
import { toUsageRow, utcDayNumber } from '../usage-repository.js';
import type { KeptConnections } from './kept-connections.js';
import { READ_ACCOUNT_MONEY, READ_HOLD, SETTLE, TAKE_HOLD } from './postgres-billing-statements.js';
import { GRANT_SLICE, RENEW_HOLDS } from './postgres-hold-growth-statements.js';
import { createPostgresLockedBilling, type PostgresLockedBilling } from './postgres-locked-billing.js';
import { PostgresWriteBatcher } from './postgres-write-batch.js';

/** The calls tried as one statement first. */
type DecidedCall = 'reserve' | 'settle' | 'grantSlice';

/**
 * PostgreSQL's billing store, the one implementation of the money hot path on PostgreSQL, in few round trips (at most 3
 * per request with the key lookup). Each of reserve, grantSlice and settle is first tried as ONE conditional statement
 * (postgres-billing-statements.ts); where that statement cannot decide by the rules it writes nothing, and the same call
 * goes on to the store's locked path (postgres-locked-billing.ts: a transaction that locks the wallet row, 5 to 8
 * round trips), which decides on the locked row. `paths` counts which one decided. In detail:
 * - the key lookup (postgres-key-lookup-batch.ts) also reads the account's money (the same round trip), which the caller passes back as the
 *   admission's hint;
 * - reserve plans from that hint (or reads the account without a lock), and takes the hold with one conditional statement that
 *   re-checks, against the row as it is then, that the hold still fits (the same condition the locked path
 *   enforces). The free tokens it planned may have been taken since by the holds in flight (an account at the end
 *   of its daily allowance): the statement takes those left and holds money for the others, priced as the planner
 *   would have (FreeTokenPrices). A plan made on a slightly older state is otherwise only ever more cautious than
 *   one made under the lock would be, or no longer fits: then, and for every refusal, the locked path decides.
 * - settle is one statement: the wallet row locked first, the hold claimed, the usage row, the charge (capped at
 *   the balance), the ledger entry and the daily rollup, all or nothing, exactly once per request id. The price
 *   depends on the free tokens the claimed hold carries (of whichever day it was taken; only a hold of the
 *   account's current day moves its free counters), which JS computes: the caller passes the free tokens the
 *   hold was taken with; if the row says otherwise the statement writes nothing and the locked path settles. What
 *   is left of the day's allowance beyond the hold, read on the locked row, the statement gives the billed tokens
 *   in the split's order, taking their price off the charge.
 * The money rules are those of billing-rules.ts, written in SQL; the billing contract tests exercise both paths.
 * Under load the holds, slices and settlements of one event-loop turn go to the server together, as one transaction
 * in one round trip (postgres-write-batch.ts), and the turn's key lookups as one read (postgres-key-lookup-batch.ts).
 */
export class PostgresBillingStore implements OwnedBillingStore {
  /** Holds, slices and settlements of this instance, sent together (postgres-write-batch.ts). */
  readonly writes: PostgresWriteBatcher;
  /**
   * Which path decided each reserve, grantSlice and settle: its one statement (alone or pipelined with others,
   * `writes.stats` tells which), or the locked transaction. For tests and metrics.
   */
  readonly paths = {
    statement: { reserve: 0, settle: 0, grantSlice: 0 },
    locked: { reserve: 0, settle: 0, grantSlice: 0 },
  };
  private readonly locked: PostgresLockedBilling;

  constructor(
    private readonly pool: pg.Pool,
    /** The batchers' connections, kept checked out between statements (kept-connections.ts); the opener closes them. */
    connections: KeptConnections,
    db: Kysely<Database>,
  ) {
    this.writes = new PostgresWriteBatcher(connections);
    this.locked = createPostgresLockedBilling(db);
  }

  /** Nothing of its own to give back: the writes in flight settle with their connections, which the opener closes. */
  async close(): Promise<void> {}

  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const decided = await this.reserveInOneStatement(input);
    return decided === undefined
      ? this.viaLock('reserve', () => this.locked.reserve(input))
      : this.viaStatement('reserve', decided);
  }

  async settle(input: SettleInput): Promise<SettleResult> {
    const decided = await this.settleInOneStatement(input);
    return decided === undefined
      ? this.viaLock('settle', () => this.locked.settle(input))
      : this.viaStatement('settle', decided);
  }

  async grantSlice(input: SliceInput): Promise<SliceResult> {
    const decided = await this.grantSliceInOneStatement(input);
    return decided === undefined
      ? this.viaLock('grantSlice', () => this.locked.grantSlice(input))
      : this.viaStatement('grantSlice', decided);
  }

  /** Rare (a hold's expiry, without a checkpoint): the locked path's plain conditional update. */
  extendHold(requestId: string, expiresAt: number): Promise<boolean> {
    return this.locked.extendHold(requestId, expiresAt);
  }

  /** The sweeper: each expired hold claimed in its own locked transaction (postgres-locked-billing.ts). */
  sweepExpiredReservations(now: number, bill: OrphanBiller, limit = 100): Promise<SweepResult> {
    return this.locked.sweepExpiredReservations(now, bill, limit);
  }

  async releaseExpiredReservations(now: number, limit = 100): Promise<number> {
    const { released, settled } = await this.locked.sweepExpiredReservations(now, () => undefined, limit);
    return released + settled;
  }

  private viaStatement<T>(call: DecidedCall, result: T): T {
    this.paths.statement[call]++;
    return result;
  }

  private viaLock<T>(call: DecidedCall, run: () => Promise<T>): Promise<T> {
    this.paths.locked[call]++;
    return run();
  }

  /**
   * A whole slice in one statement (docs/architecture.md#holds-that-grow): the wallet row locked first, the hold grown
   * only if the account can pay for the whole slice (free tokens first), the account's reserved money and free tokens
   * raised by what the hold grew, and its checkpoint written. Undefined when it wrote nothing (the account cannot pay
   * for the whole slice, or the hold is gone): the locked transaction then grants what is left, or refuses with the
   * state.
   */
  private async grantSliceInOneStatement(input: SliceInput): Promise<SliceResult | undefined> {
    const checkpoint = input.checkpoint;
    // An organisation with spend limits grows nothing here (GRANT_SLICE's condition): the locked path decides.
    const result = await this.writes.run({
      accountId: input.accountId,
      name: 'grant_slice',
      text: GRANT_SLICE,
      // Its checkpoint rides along: it only matters if this instance crashes as well (decision record 0020).
      holdOnly: true,
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
      ],
    });
    const row = result.rows[0] as { free: string } | undefined;
    if (row === undefined) return undefined;
    const freeTokens = Number(row.free);
    const holdNano = BigInt(input.tokens - freeTokens) * input.outputPriceNano;
    return { granted: true, tokens: input.tokens, holdNano, freeTokens };
  }

  /**
   * An instance's periodic batch in one statement (one round trip, whatever the number of live holds): each hold's
   * expiry moved forward and, where given, its checkpoint written. It locks only the holds' own rows, which no
   * other instance writes (a sweeper claims a hold only once expired, after locking its account), so it cannot
   * deadlock with a settlement.
   */
  async renewHolds(renewals: readonly HoldRenewal[]): Promise<Set<string>> {
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

  /**
   * Undefined: not decided here; the locked path decides. TAKE_HOLD writes nothing for an organisation with spend
   * limits, whose holds the locked path takes against every limit.
   */
  private async reserveInOneStatement(input: ReserveInput): Promise<ReserveResult | undefined> {
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
      decision = decideAdmission(account, input);
    } catch {
      return undefined;
    }
    const { plan } = decision;
    if (!plan.admitted) return undefined;
    const prices = plan.freeTokenPrices;
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
      prices?.outputTokens ?? 0,
      (prices?.outputNano ?? 0n).toString(),
      (prices?.inputNano ?? 0n).toString(),
      prices === undefined ? plan.freeTokens : 0,
    ];
    const taken = await this.writes.run({
      accountId: input.accountId,
      name: 'take_hold',
      text: TAKE_HOLD,
      values,
      holdOnly: true,
    });
    const row = taken.rows[0] as { hold: string; free_tokens: number | string } | undefined;
    if (row === undefined) return undefined;
    const freeTokens = Number(row.free_tokens);
    if (freeTokens === plan.freeTokens) return admitted(input, plan);
    // Fewer free tokens were left than the plan's read said; the rest is held as money. Whether that money would
    // also pay for the whole output limit is not known here, so the reply is metered as one that it would not.
    return admitted(input, { ...plan, holdNano: BigInt(row.hold), freeTokens, coversLimit: false });
  }

  /**
   * The usage split by the pricer as if money were no limit, with the free tokens of the hold, and the statement
   * giving its billed tokens what is left of the day's allowance: the split the rule gives whenever the statement
   * finds the charge within the balance and no spend limit applies (SETTLE's `ok`). Otherwise nothing is written and
   * the locked transaction splits it within what is there.
   */
  private async settleInOneStatement({
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
    // The statement gives the billed tokens whatever is left of the day's allowance beyond the hold, in order. A split
    // that does not say which tokens are billed leaves that to the locked path whenever one more free token would be
    // used.
    const billed = split.billedInFreeOrder;
    const wantsMoreFree =
      billed === undefined &&
      price({ freeTokens: expectedFree + 1, moneyNano: [NO_MONEY_LIMIT] }).freeTokens > split.freeTokens;
    const row = toUsageRow(usage);
    const at = usage.createdAt + usage.latencyMs;
    const result = await this.writes.run({
      accountId: row.account_id,
      name: 'settle',
      text: SETTLE,
      holdOnly: false,
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
        row.cache_write_1h_tokens,
        freeAllowanceTokens,
        row.web_search_requests,
        row.web_fetch_requests,
        row.server_tool_nano,
        row.local_input_tokens,
        (billed ?? []).map((kind) => kind.tokens),
        (billed ?? []).map((kind) => kind.priceNano.toString()),
      ],
    });
    const outcome = result.rows[0] as SettleRow | undefined;
    if (outcome === undefined || !outcome.consistent) return undefined;
    if (Number(outcome.inserted) === 0) return { settled: false, reason: 'already_settled' };
    const chargedNano = BigInt(outcome.charged);
    const freeTokensUsed = Number(outcome.free_used);
    if (freeTokensUsed > split.freeTokens) {
      // The statement gave free tokens left of the day: its arithmetic must be the rule's for that room.
      const ruled = price({
        freeTokens: expectedFree + freeTokensUsed - split.freeTokens,
        moneyNano: [NO_MONEY_LIMIT],
      });
      if (ruled.billedNano !== chargedNano || ruled.freeTokens !== freeTokensUsed)
        throw new Error(`Settlement ${row.request_id} was written with a split the rule does not give.`);
    }
    return { settled: true, chargedNano, unbilledNano: 0n, unbilledTokens: 0, freeTokensUsed };
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
