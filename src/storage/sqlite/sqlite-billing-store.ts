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
  type LimitPeriod,
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
import {
  checkpointParameters,
  prepareBillingStatements,
  USAGE_COLUMNS,
  type BillingStatements,
} from './sqlite-billing-statements.js';
import type { GroupCommit } from './sqlite-group-commit.js';

/**
 * SQLite's billing store, the one implementation of the money hot path on SQLite: prepared statements run synchronously
 * on the better-sqlite3 handle, each call one synchronous function inside the turn's group commit (sqlite-group-commit.ts),
 * so nothing else can run inside it and no await, query building or connection hand-over is paid per statement.
 * Profiled on the bench: Kysely's query building and async connection handling were about 40% of the gateway's CPU per
 * request, more than SQLite's own work. The money rules are billing-rules.ts's and billing/'s pure functions.
 *
 * The statements are prepared on the first call (they need the tables, which `storage.migrate()` creates): nothing
 * here depends on when, or whether, migrate ran, beyond the tables being there.
 */
export class SqliteBillingStore implements OwnedBillingStore {
  private prepared: BillingStatements | undefined;

  constructor(
    private readonly database: BetterSqliteDatabase,
    private readonly commits: GroupCommit,
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
    return this.commits.run(() => this.reserveNow(input));
  }

  async settle(input: SettleInput): Promise<SettleResult> {
    try {
      return await this.commits.run(() => this.settleNow(input));
    } catch (error) {
      if (error instanceof AlreadySettled) return { settled: false, reason: 'already_settled' };
      throw error;
    }
  }

  // Slices and the periodic batch of checkpoints join the group commit too: a grant is one synchronous
  // read-and-conditional-write, a batch one statement per hold, both inside the turn's transaction.
  grantSlice(input: SliceInput): Promise<SliceResult> {
    return this.commits.run(() => this.grantSliceNow(input));
  }

  renewHolds(renewals: readonly HoldRenewal[]): Promise<Set<string>> {
    return this.commits.run(() => this.renewHoldsNow(renewals));
  }

  extendHold(requestId: string, expiresAt: number): Promise<boolean> {
    return this.commits.run(() => {
      if (this.s.extendHold.run(expiresAt, requestId, expiresAt).changes > 0) return true;
      // Not moved: either gone, or already as late (then it is still there).
      return this.s.holdExists.get(requestId) !== undefined;
    });
  }

  async releaseExpiredReservations(now: number, limit = 100): Promise<number> {
    const { released, settled } = await this.sweepExpiredReservations(now, () => undefined, limit);
    return released + settled;
  }

  /**
   * Each expired hold claimed in a write of its own (a failing one fails alone), all in the turn's group commit:
   * settled at its checkpoint, or released. Safe beside another process's sweeper: the claim is the delete.
   */
  async sweepExpiredReservations(now: number, bill: OrphanBiller, limit = 100): Promise<SweepResult> {
    const expired = await this.commits.run(() => this.s.expiredHolds.all(now, limit) as string[]);
    const outcomes = await Promise.all(
      expired.map((requestId) => this.commits.run(() => this.sweepOneNow(requestId, now, bill))),
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

  private sweepOneNow(requestId: string, now: number, bill: OrphanBiller): SweepOutcome | undefined {
    const row = this.s.claimExpiredHold.get(requestId, now) as ExpiredHoldRow | undefined;
    if (row === undefined) return undefined;
    const account = this.tryLock(row.account_id);
    const claimed: ClaimedHold = {
      holdNano: BigInt(row.hold),
      freeTokens: row.free_tokens,
      freeDay: row.free_day,
    };
    const billed =
      account === null
        ? undefined
        : bill({
            requestId,
            accountId: row.account_id,
            apiKeyId: row.api_key_id,
            createdAt: row.created_at,
            checkpoint: checkpointOf(row),
          });
    if (billed !== undefined && account !== null) {
      const settled = this.settleClaimedNow(account, billed.usage, claimed, billed.price, billed.freeAllowanceTokens);
      if (settled?.settled === true) {
        const { unbilledTokens: tokens, unbilledNano: nanoUsd } = settled;
        return { kind: 'settled', unbilled: { model: billed.usage.model, tokens, nanoUsd } };
      }
    }
    // Released without a charge: its money and today's free tokens back to the account, its limits' part to them.
    const heldFree = account !== null && claimed.freeDay === account.freeDay ? claimed.freeTokens : 0;
    this.releaseLimitHoldsNow(requestId);
    this.s.releaseAccountHold.run(claimed.holdNano, heldFree, row.account_id);
    return { kind: 'released' };
  }

  private lock(accountId: string): LockedAccount {
    const account = this.tryLock(accountId);
    if (account === null) throw new Error(`No account ${accountId}.`);
    return account;
  }

  /** The account's money, read inside the batch's transaction (BEGIN IMMEDIATE holds the database's write lock). */
  private tryLock(accountId: string): LockedAccount | null {
    const values = this.s.lockAccount.get(accountId) as [string, string, number, number, number] | undefined;
    if (values === undefined) return null;
    const row: AccountMoneyRow = {
      balance: values[0],
      reserved: values[1],
      free_day: values[2],
      free_used_tokens: values[3],
      free_reserved_tokens: values[4],
    };
    return toLockedAccount(row);
  }

  /** The spend limits over a request of the key, read in the transaction that holds the database's write lock. */
  private limitsOver(organisationId: string, keyId: string): LockedLimit[] {
    return toLockedLimits(this.s.applicableLimits.all({ organisationId, keyId }) as LimitRow[]);
  }

  /** Takes `holdNano` on every limit, recorded against the request; throws (rolling the batch back) if one no longer fits. */
  private takeLimitHoldsNow(requestId: string, limits: readonly LimitPeriod[], holdNano: bigint): void {
    if (holdNano === 0n) return;
    for (const limit of limits) {
      if (this.s.takeLimitHold.run({ limitId: limit.id, hold: holdNano, period: limit.periodNumber }).changes !== 1) {
        throw new Error("A spend limit changed under its organisation's lock.");
      }
      this.s.recordLimitHold.run({ requestId, limitId: limit.id, hold: holdNano });
    }
  }

  /** Releases exactly what the request held on each limit still there. */
  private releaseLimitHoldsNow(requestId: string): void {
    for (const held of this.s.claimLimitHolds.all({ requestId }) as Array<{ limit_id: string; hold_nano: string }>) {
      this.s.releaseLimitHold.run({ limitId: held.limit_id, hold: held.hold_nano });
    }
  }

  private reserveNow(input: ReserveInput): ReserveResult {
    const account = this.lock(input.accountId);
    const limits = this.limitsOver(input.accountId, input.apiKeyId);
    const { sameDay, state, plan, limits: periods } = decideAdmission(account, input, limits);
    if (!plan.admitted) return { admitted: false, reason: plan.reason, state };
    const same = sameDay ? 1 : 0;
    const hold = plan.holdNano;
    if (
      this.s.takeHold.run(hold, input.day, same, same, plan.freeTokens, plan.freeTokens, input.accountId, hold)
        .changes !== 1
    ) {
      throw new Error('The account changed under its lock.');
    }
    // Thrown inside the batch's transaction if a limit no longer fits: the account's hold above is rolled back with it.
    if (periods !== undefined) this.takeLimitHoldsNow(input.requestId, periods, hold);
    this.s.insertHold.run(
      input.requestId,
      input.accountId,
      input.apiKeyId,
      hold,
      plan.freeTokens,
      input.day,
      plan.maxOutputTokens,
      input.createdAt,
      input.expiresAt,
    );
    return admitted(input, plan, periods === undefined ? 0n : hold);
  }

  private grantSliceNow(input: SliceInput): SliceResult {
    const account = this.lock(input.accountId);
    const hold = this.s.readHoldDay.get(input.requestId) as { free_day: number; api_key_id: string } | undefined;
    // The limits read in the same transaction as the account's money (docs/billing.md#spend-limits): the slice fits all.
    const keyId = input.apiKeyId ?? hold?.api_key_id;
    const limits = keyId === undefined ? [] : this.limitsOver(input.accountId, keyId);
    const { state, plan, limits: periods } = planSlice(account, input, hold === undefined ? -1 : hold.free_day, limits);
    if (hold === undefined) return { granted: false, reason: 'gone', state };
    if (!plan.granted) return { granted: false, reason: plan.reason, state };
    if (
      this.s.takeSlice.run({ accountId: input.accountId, hold: plan.holdNano, freeTokens: plan.freeTokens }).changes !==
      1
    ) {
      throw new Error('The account changed under its lock.');
    }
    // Thrown inside the batch's transaction if a limit no longer fits: the account's part above is rolled back with it.
    this.takeLimitHoldsNow(input.requestId, periods, plan.holdNano);
    const limitHold = periods.length === 0 ? 0n : plan.holdNano;
    this.s.growHold.run({
      requestId: input.requestId,
      hold: plan.holdNano,
      freeTokens: plan.freeTokens,
      tokens: plan.tokens,
      expiresAt: input.expiresAt,
      ...checkpointParameters(input.checkpoint),
    });
    return {
      granted: true,
      tokens: plan.tokens,
      holdNano: plan.holdNano,
      freeTokens: plan.freeTokens,
      ...(limitHold === 0n ? {} : { limitHoldNano: limitHold }),
    };
  }

  private renewHoldsNow(renewals: readonly HoldRenewal[]): Set<string> {
    const gone = new Set<string>();
    for (const renewal of renewals) {
      const changed = this.s.renewHold.run({
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
    const held = this.s.claimHold.get(usage.requestId) as HoldRow | undefined;
    const claimed: ClaimedHold | undefined =
      held === undefined ? undefined : { holdNano: BigInt(held[0]), freeTokens: held[1], freeDay: held[2] };
    const result = this.settleClaimedNow(account, usage, claimed, price, freeAllowanceTokens);
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
    account: LockedAccount,
    usage: UsageRecord,
    claimed: ClaimedHold | undefined,
    price: SettlementPricer,
    freeAllowanceTokens: number,
  ): SettleResult | undefined {
    const limits = this.limitsOver(usage.accountId, usage.apiKeyId);
    const amounts = settlementAmounts(
      account,
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
    this.s.applySettlement.run(
      amounts.chargedNano,
      amounts.holdNano,
      amounts.heldFreeTokens,
      amounts.freeTokensUsedToday,
      usage.accountId,
    );
    // What the hold took on each limit goes back; the charge is added to every limit over the request.
    this.releaseLimitHoldsNow(usage.requestId);
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
        account.balance - amounts.chargedNano,
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

/** The state a checkpoint column set holds: null when the request had delivered nothing when last written. */
function checkpointOf(row: ExpiredHoldRow): HoldCheckpoint | null {
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

class AlreadySettled extends Error {}

/** One claimed hold's fate inside the sweep's write. */
type SweepOutcome = { kind: 'released' } | { kind: 'settled'; unbilled: SweepResult['unbilled'][number] };

/** claimHold's row: hold, free tokens, free day. */
type HoldRow = [hold: string, freeTokens: number, freeDay: number];

/** claimExpiredHold's row. */
interface ExpiredHoldRow {
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
