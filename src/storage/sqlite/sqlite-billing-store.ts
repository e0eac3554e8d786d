import type { Database as BetterSqliteDatabase } from 'better-sqlite3';
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
  toLockedLimits,
  type AccountMoneyRow,
  type ClaimedHold,
  type LimitRow,
  type LockedAccount,
  type LockedLimit,
} from '../billing-rules.js';
import type {
  HoldCheckpoint,
  HoldRenewal,
  OrphanBiller,
  OwnedBillingStore,
  ReserveInput,
  ReserveResult,
  SettleInput,
  SettleResult,
  SettlementPricer,
  SliceInput,
  SliceResult,
  SweepResult,
} from '../billing-types.js';
import type { UsageRecord } from '../types.js';
import { toUsageRow, utcDayNumber } from '../usage-repository.js';
import { withHeld } from '../held-in-memory.js';
import {
  checkpointOf,
  checkpointValues,
  prepareBillingStatements,
  type ExpiredHoldRow,
  type HoldRow,
  USAGE_COLUMNS,
  type BillingStatements,
} from './sqlite-billing-statements.js';
import type { MemoryHoldBook } from './memory-hold-book.js';
import type { GroupCommit } from './sqlite-group-commit.js';

/**
 * SQLite's billing store, the one implementation of the money hot path on SQLite: prepared statements run synchronously
 * on the better-sqlite3 handle, so no await, query building or connection hand-over is paid per statement. Profiled on
 * the bench: Kysely's query building and async connection handling were about 40% of the gateway's CPU per request,
 * more than SQLite's own work. The money rules are billing-rules.ts's and billing/'s pure functions.
 *
 * One process owns the file (open-sqlite-storage.ts locks it), so live holds are kept in memory (memory-hold-book.ts,
 * docs/decisions/0019-sqlite-holds-in-memory.md): admission and slices read the money from SQLite and decide against
 * balance less those holds in one synchronous step, writing nothing. Settlement, checkpoints and the sweeper's claims
 * are the writes, each inside the turn's group commit (sqlite-group-commit.ts); a settlement releases its hold only
 * once its write has committed.
 *
 * The statements are prepared on the first call (they need the tables, which `storage.migrate()` creates): nothing
 * here depends on when, or whether, migrate ran, beyond the tables being there.
 */
export class SqliteBillingStore implements OwnedBillingStore {
  private prepared: BillingStatements | undefined;
  /** Live holds a sweep has taken and not yet finished with. */
  private readonly sweeping = new Set<string>();

  constructor(
    private readonly database: BetterSqliteDatabase,
    private readonly commits: GroupCommit,
    private readonly book: MemoryHoldBook,
    /** Runs `work` once no other transaction is open on the handle (open-sqlite-storage.ts: Kysely's connection). */
    private readonly whenHandleFree: (work: () => void) => Promise<void>,
  ) {}

  /** The statements, prepared on first use. */
  private get s(): BillingStatements {
    this.prepared ??= prepareBillingStatements(this.database);
    return this.prepared;
  }

  /** Writes still queued go in (their callers are answered), before the handle closes. */
  close(): Promise<void> {
    return this.commits.flushAll();
  }

  reserve(input: ReserveInput): Promise<ReserveResult> {
    return this.decide(() => this.reserveNow(input));
  }

  async settle(input: SettleInput): Promise<SettleResult> {
    const { requestId } = input.usage;
    try {
      const result = await this.commits.run(() => this.settleNow(input));
      this.book.release(requestId);
      return result;
    } catch (error) {
      if (!(error instanceof AlreadySettled)) throw error;
      this.book.release(requestId);
      return { settled: false, reason: 'already_settled' };
    }
  }

  grantSlice(input: SliceInput): Promise<SliceResult> {
    return this.decide(() => this.grantSliceNow(input));
  }

  /** Expiries move in memory; only checkpoints that moved are written, in one write of the turn's group commit. */
  async renewHolds(renewals: readonly HoldRenewal[]): Promise<Set<string>> {
    const gone = new Set<string>();
    const checkpoints: Array<HoldRenewal & { checkpoint: HoldCheckpoint }> = [];
    for (const renewal of renewals) {
      if (!this.book.renew(renewal.requestId, renewal.expiresAt, renewal.checkpoint)) gone.add(renewal.requestId);
      else if (renewal.checkpoint !== undefined) checkpoints.push({ ...renewal, checkpoint: renewal.checkpoint });
    }
    if (checkpoints.length > 0) {
      await this.commits.run(() => {
        for (const { requestId, expiresAt, checkpoint } of checkpoints)
          this.writeCheckpointNow(requestId, expiresAt, checkpoint);
      });
    }
    return gone;
  }

  extendHold(requestId: string, expiresAt: number): Promise<boolean> {
    return Promise.resolve(this.book.renew(requestId, expiresAt));
  }

  async releaseExpiredReservations(now: number, limit = 100): Promise<number> {
    const { released, settled } = await this.sweepExpiredReservations(now, () => undefined, limit);
    return released + settled;
  }

  /**
   * Live holds past their expiry (requests that never settled), and rows no live hold owns (checkpoints of a process
   * that crashed, holds a previous version wrote) once expired: each settled at its checkpoint, or released, in a
   * write of its own (a failing one fails alone) in the turn's group commit. A row whose request still holds here is
   * never taken: its settlement will come.
   */
  async sweepExpiredReservations(now: number, bill: OrphanBiller, limit = 100): Promise<SweepResult> {
    // A live hold is swept by one sweep at a time (a stored row's claim is its delete, which only one can make).
    const candidates = this.book
      .expired(now)
      .filter((requestId) => !this.sweeping.has(requestId))
      .slice(0, limit);
    for (const requestId of candidates) this.sweeping.add(requestId);
    const outcomes = await Promise.all(
      [...candidates, ...(await this.commits.run(() => this.orphanRowsNow(now, limit)))].map(async (requestId) => {
        try {
          const outcome = await this.commits.run(() => this.sweepOneNow(requestId, now, bill));
          // Released once the write has committed: a rolled-back settlement leaves the hold for the next sweep.
          if (outcome?.live === true) this.book.release(requestId);
          return outcome;
        } finally {
          this.sweeping.delete(requestId);
        }
      }),
    );
    const result: SweepResult = { released: 0, settled: 0, unbilled: [] };
    for (const outcome of outcomes) {
      if (outcome === undefined) continue;
      result[outcome.kind] += 1;
      // Counted once the write has committed: a rolled-back settlement left nothing unbilled.
      if (outcome.kind === 'settled' && (outcome.unbilled.tokens > 0 || outcome.unbilled.nanoUsd > 0n))
        result.unbilled.push(outcome.unbilled);
    }
    return result;
  }

  /**
   * Runs an admission or a slice now, reading the money and changing the book in one synchronous step. While a
   * transaction of Kysely's is open on the handle (a credit, a tier bought) it waits for it to close: its uncommitted
   * rows must not be read, and a check that spends the balance must see every hold taken before its write.
   */
  private decide<T>(work: () => T): Promise<T> {
    if (!this.database.inTransaction) {
      try {
        return Promise.resolve(work());
      } catch (error) {
        return Promise.reject(error as Error);
      }
    }
    let result: T;
    return this.whenHandleFree(() => {
      result = work();
    }).then(() => result);
  }

  /** The request ids of rows past their expiry that no live hold here owns, at most `limit`. */
  private orphanRowsNow(now: number, limit: number): string[] {
    const orphans: string[] = [];
    if (limit <= 0) return orphans;
    for (const requestId of this.s.expiredHolds.iterate(now) as IterableIterator<string>) {
      if (this.book.has(requestId)) continue;
      orphans.push(requestId);
      if (orphans.length >= limit) break;
    }
    return orphans;
  }

  private sweepOneNow(requestId: string, now: number, bill: OrphanBiller): SweepOutcome | undefined {
    const live = this.book.get(requestId);
    // Renewed since it was listed: its request still runs.
    if (live !== undefined && live.expiresAt >= now) return undefined;
    // A live hold's row is its checkpoint, whatever expiry it was written with; any other row is claimed once expired.
    const row = this.s.claimExpiredHold.get(requestId, live === undefined ? now : Number.MAX_SAFE_INTEGER) as
      | ExpiredHoldRow
      | undefined;
    if (live === undefined && row === undefined) return undefined;
    const accountId = live?.accountId ?? row!.account_id;
    const claimed: ClaimedHold =
      live === undefined
        ? { holdNano: BigInt(row!.hold), freeTokens: row!.free_tokens, freeDay: row!.free_day }
        : { holdNano: live.holdNano, freeTokens: live.freeTokens, freeDay: live.freeDay };
    const account = this.tryAccount(accountId);
    // A live hold's checkpoint in memory is its latest (a slice's is written by the next periodic batch only).
    const checkpoint = live?.checkpoint ?? (row === undefined ? null : checkpointOf(row));
    const billed =
      account === null
        ? undefined
        : bill({
            requestId,
            accountId,
            apiKeyId: live?.apiKeyId ?? row!.api_key_id,
            createdAt: live?.createdAt ?? row!.created_at,
            checkpoint,
          });
    const stored = live === undefined;
    if (billed !== undefined && account !== null) {
      const settled = this.settleClaimedNow(
        account,
        billed.usage,
        claimed,
        stored,
        billed.price,
        billed.freeAllowanceTokens,
      );
      if (settled?.settled === true) {
        const { unbilledTokens: tokens, unbilledNano: nanoUsd } = settled;
        return { kind: 'settled', live: !stored, unbilled: { model: billed.usage.model, tokens, nanoUsd } };
      }
    }
    // Released without a charge. A live hold goes from memory once this commits; a stored one gives its money and
    // today's free tokens back to the account's counters, its limits' part to them.
    if (stored) {
      const heldFree = account !== null && claimed.freeDay === account.stored.freeDay ? claimed.freeTokens : 0;
      this.releaseLimitHoldsNow(requestId);
      this.s.releaseAccountHold.run(claimed.holdNano, heldFree, accountId);
    }
    return { kind: 'released', live: !stored };
  }

  private account(accountId: string): AccountMoney {
    const account = this.tryAccount(accountId);
    if (account === null) throw new Error(`No account ${accountId}.`);
    return account;
  }

  /**
   * The account's money as stored and as the rules see it (with what live holds take), read synchronously: inside
   * the batch's transaction for a settlement (BEGIN IMMEDIATE holds the database's write lock), on its own for an
   * admission or a slice.
   */
  private tryAccount(accountId: string): AccountMoney | null {
    const values = this.s.lockAccount.get(accountId) as [string, string, number, number, number] | undefined;
    if (values === undefined) return null;
    const row: AccountMoneyRow = {
      balance: values[0],
      reserved: values[1],
      free_day: values[2],
      free_used_tokens: values[3],
      free_reserved_tokens: values[4],
    };
    const stored = toLockedAccount(row);
    return { stored, seen: withHeld(stored, this.book.account(accountId)) };
  }

  /** The spend limits over a request of the key, with what live holds take of each. */
  private limitsOver(organisationId: string, keyId: string): LockedLimit[] {
    const limits = toLockedLimits(this.s.applicableLimits.all({ organisationId, keyId }) as LimitRow[]);
    for (const limit of limits) limit.reservedNano += this.book.limitNano(limit.id);
    return limits;
  }

  /** Releases exactly what a stored hold (a previous version's) held on each limit still there. */
  private releaseLimitHoldsNow(requestId: string): void {
    for (const held of this.s.claimLimitHolds.all({ requestId }) as Array<{ limit_id: string; hold_nano: string }>) {
      this.s.releaseLimitHold.run({ limitId: held.limit_id, hold: held.hold_nano });
    }
  }

  private reserveNow(input: ReserveInput): ReserveResult {
    const account = this.account(input.accountId).seen;
    const limits = this.limitsOver(input.accountId, input.apiKeyId);
    const { state, plan, limits: periods } = decideAdmission(account, input, limits);
    if (!plan.admitted) return { admitted: false, reason: plan.reason, state };
    const hold = plan.holdNano;
    const held = new Map<string, bigint>();
    if (periods !== undefined && hold !== 0n) for (const limit of periods) held.set(limit.id, hold);
    this.book.take(input.requestId, {
      accountId: input.accountId,
      apiKeyId: input.apiKeyId,
      holdNano: hold,
      freeTokens: plan.freeTokens,
      freeDay: input.day,
      maxOutputTokens: plan.maxOutputTokens,
      createdAt: input.createdAt,
      expiresAt: input.expiresAt,
      limits: held,
      checkpointStored: false,
    });
    return admitted(input, plan, periods === undefined ? 0n : hold);
  }

  /**
   * One more slice on a live hold, decided and taken in memory. Its checkpoint is not written here (that would be a
   * commit per slice): the periodic batch writes it (`checkpointDeferred`), within one interval.
   */
  private grantSliceNow(input: SliceInput): SliceResult {
    const account = this.account(input.accountId).seen;
    const hold = this.book.get(input.requestId);
    // The limits read in the same step as the account's money (docs/billing.md#spend-limits): the slice fits all.
    const keyId = input.apiKeyId ?? hold?.apiKeyId;
    const limits = keyId === undefined ? [] : this.limitsOver(input.accountId, keyId);
    const { state, plan, limits: periods } = planSlice(account, input, hold === undefined ? -1 : hold.freeDay, limits);
    if (hold === undefined) return { granted: false, reason: 'gone', state };
    if (!plan.granted) return { granted: false, reason: plan.reason, state };
    this.book.grow(input.requestId, {
      holdNano: plan.holdNano,
      freeTokens: plan.freeTokens,
      tokens: plan.tokens,
      expiresAt: input.expiresAt,
      limitIds: periods.map((limit) => limit.id),
      ...(input.checkpoint === undefined ? {} : { checkpoint: input.checkpoint }),
    });
    const limitHold = periods.length === 0 ? 0n : plan.holdNano;
    return {
      granted: true,
      tokens: plan.tokens,
      holdNano: plan.holdNano,
      freeTokens: plan.freeTokens,
      ...(limitHold === 0n ? {} : { limitHoldNano: limitHold }),
      ...(input.checkpoint === undefined ? {} : { checkpointDeferred: true }),
    };
  }

  /** A live request's checkpoint row (hold 0), unless it has settled meanwhile. */
  private writeCheckpointNow(requestId: string, expiresAt: number, checkpoint: HoldCheckpoint): void {
    const hold = this.book.get(requestId);
    if (hold === undefined) return;
    hold.checkpointStored = true;
    this.s.writeCheckpoint.run(
      requestId,
      hold.accountId,
      hold.apiKeyId,
      hold.freeDay,
      hold.maxOutputTokens,
      hold.createdAt,
      expiresAt,
      ...checkpointValues(checkpoint),
      requestId,
    );
  }

  private settleNow({ usage, price, freeAllowanceTokens }: SettleInput): SettleResult {
    const account = this.account(usage.accountId);
    const live = this.book.get(usage.requestId);
    // The row goes either way: a live hold's checkpoint, or a hold a previous version stored (then it is the claim).
    // A live hold no checkpoint was written for has no row (request ids are never reused), so the delete is skipped.
    const row =
      live !== undefined && live.checkpointStored !== true
        ? undefined
        : (this.s.claimHold.get(usage.requestId) as HoldRow | undefined);
    const claimed: ClaimedHold | undefined =
      live !== undefined
        ? { holdNano: live.holdNano, freeTokens: live.freeTokens, freeDay: live.freeDay }
        : row === undefined
          ? undefined
          : { holdNano: BigInt(row[0]), freeTokens: row[1], freeDay: row[2] };
    const stored = live === undefined && row !== undefined;
    const result = this.settleClaimedNow(account, usage, claimed, stored, price, freeAllowanceTokens);
    // Settled before: undo the claim above by throwing out of the transaction, which rolls it back.
    if (result === undefined) throw new AlreadySettled();
    return result;
  }

  /**
   * The settlement of a claimed hold (or none), the account read in this transaction: the usage row, the charge
   * (split by billing/usage-split.ts's rule within the balance and the key's spend limit), the hold released, the
   * ledger entry and the daily rollup. Undefined, having written nothing, when the request id was settled before.
   */
  private settleClaimedNow(
    account: AccountMoney,
    usage: UsageRecord,
    claimed: ClaimedHold | undefined,
    /** The claim is a stored hold (a previous version's), counted in the account's and limits' columns. */
    stored: boolean,
    price: SettlementPricer,
    freeAllowanceTokens: number,
  ): SettleResult | undefined {
    const limits = this.limitsOver(usage.accountId, usage.apiKeyId);
    const amounts = settlementAmounts(
      account.seen,
      claimed,
      price,
      { freeAllowanceTokens, startedAt: usage.createdAt },
      limits,
    );
    const settled = settledUsage(usage, amounts);
    const row = toUsageRow(settled);
    // Spread, not an array: better-sqlite3 reads an array's elements through V8's generic property lookup from C++
    // (~430 instructions each under callgrind), arguments it takes as they are.
    if (this.s.insertUsage.run(...USAGE_COLUMNS.map((column) => row[column])).changes === 0) return undefined;
    // The counters of the day the rules saw (a live hold's new day reaches the row here); a stored hold's money and
    // free tokens leave the columns that counted them, a live one's leave memory once this commits.
    const { stored: counters, seen } = account;
    const onDay = counters.freeDay === seen.freeDay;
    this.s.applySettlement.run(
      amounts.chargedNano,
      stored ? amounts.holdNano : 0n,
      seen.freeDay,
      (onDay ? counters.freeUsed : 0) + amounts.freeTokensUsedToday,
      (onDay ? counters.freeReserved : 0) - (stored ? amounts.heldFreeTokens : 0),
      usage.accountId,
    );
    // What a stored hold took on each limit goes back; the charge is added to every limit over the request.
    if (stored) this.releaseLimitHoldsNow(usage.requestId);
    if (amounts.chargedNano !== 0n) {
      for (const limit of amounts.chargedLimits) {
        this.s.chargeLimit.run({ limitId: limit.id, charged: amounts.chargedNano, period: limit.periodNumber });
      }
    }
    if (needsLedgerLine(amounts)) {
      const at = usage.createdAt + usage.latencyMs;
      this.s.insertLedger.run(
        ledgerId(at),
        usage.accountId,
        -amounts.chargedNano,
        seen.balance - amounts.chargedNano,
        `usage:${usage.requestId}`,
        usage.requestId,
        usage.model,
        at,
        amounts.unbilledTokens,
        amounts.unbilledNano,
      );
    }
    this.s.addToDaily.run(
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

class AlreadySettled extends Error {}

/** One claimed hold's fate inside the sweep's write; `live`: the hold was in memory (released once committed). */
type SweepOutcome =
  | { kind: 'released'; live: boolean }
  | { kind: 'settled'; live: boolean; unbilled: SweepResult['unbilled'][number] };

/** The account's money as its row stores it, and as the money rules see it (with the live holds in memory). */
interface AccountMoney {
  stored: LockedAccount;
  seen: LockedAccount;
}
