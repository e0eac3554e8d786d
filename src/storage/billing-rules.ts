import { randomHex } from '../ids/random-hex.js';
import { fromMoneyColumn } from './money-sql.js';
import { spendPeriodNumber, type SpendPeriod } from './key-permission-types.js';
import { isLimitScope, periodsOf, type LimitScope } from './spend-limit-types.js';
import type {
  AdmissionPlan,
  AdmissionState,
  SpendLimitState,
  ReserveInput,
  ReserveResult,
  SettleResult,
  SettlementPricer,
  SettlementRoom,
  SliceInput,
  SlicePlan,
} from './billing-types.js';
import type { AccountMoneySnapshot, UsageRecord } from './types.js';

const MS_PER_DAY = 86_400_000;

/**
 * The arithmetic of admission and settlement, shared by both billing stores (SQLite's, and PostgreSQL's locked
 * path; its one-statement path writes the same rules in SQL), so the money rules exist once and only the SQL
 * differs. Every function here is pure: the caller reads the account under its lock and writes the result.
 */

/** The account's money and free-allowance counters, as read under the wallet row's lock. */
export type LockedAccount = AccountMoneySnapshot;

/**
 * The account's money columns as every storage path selects them: amounts cast to text (money-sql.ts), the free
 * counters as numbers (SQLite) or as text (PostgreSQL's bigint).
 */
export interface AccountMoneyRow {
  balance: string;
  reserved: string;
  free_day: number | string;
  free_used_tokens: number | string;
  free_reserved_tokens: number | string;
}

export function toLockedAccount(row: AccountMoneyRow): LockedAccount {
  return {
    balance: fromMoneyColumn(row.balance),
    reserved: fromMoneyColumn(row.reserved),
    freeDay: Number(row.free_day),
    freeUsed: Number(row.free_used_tokens),
    freeReserved: Number(row.free_reserved_tokens),
  };
}

export interface AdmissionDecision {
  /** The free counters belong to the request's day (otherwise they restart at zero). */
  sameDay: boolean;
  state: AdmissionState;
  plan: AdmissionPlan;
  /** The spend limits over the request, each with its period number now: the hold counts against every one. */
  limits?: LimitPeriod[];
}

/** A limit and the number of its period at some moment (what its SQL compares `period_start` with). */
export interface LimitPeriod {
  id: string;
  periodNumber: number;
}

/** A spend limit's row as every storage path selects it (money as text, see money-sql.ts). */
export interface LimitRow {
  id: string;
  scope: string;
  scope_id: string;
  period: string;
  limit_nano: string;
  used_nano: string;
  reserved_nano: string;
  period_start: number | string;
}

/** A spend limit and its counters, as read under its organisation's lock. */
export interface LockedLimit {
  id: string;
  scope: LimitScope;
  scopeId: string;
  period: SpendPeriod;
  limitNano: bigint;
  periodStart: number;
  usedNano: bigint;
  reservedNano: bigint;
}

/** The rows a store read, as limits; a row of a scope or period this version does not know limits nothing. */
export function toLockedLimits(rows: readonly LimitRow[]): LockedLimit[] {
  const limits: LockedLimit[] = [];
  for (const row of rows) {
    if (!isLimitScope(row.scope) || !(periodsOf(row.scope) as readonly string[]).includes(row.period)) continue;
    limits.push({
      id: row.id,
      scope: row.scope,
      scopeId: row.scope_id,
      period: row.period as SpendPeriod,
      limitNano: fromMoneyColumn(row.limit_nano),
      periodStart: Number(row.period_start),
      usedNano: fromMoneyColumn(row.used_nano),
      reservedNano: fromMoneyColumn(row.reserved_nano),
    });
  }
  return limits;
}

/** One limit as the planner sees it at `at`: an older period's settled spend counts as nothing. */
export function limitState(limit: LockedLimit, at: number, accountAvailable: bigint): SpendLimitState & LimitPeriod {
  const periodNumber = spendPeriodNumber(limit.period, at);
  const spentNano = limit.periodStart >= periodNumber ? limit.usedNano : 0n;
  const left = limit.limitNano - spentNano - limit.reservedNano;
  const remainingNano = left > 0n ? left : 0n;
  return {
    id: limit.id,
    scope: limit.scope,
    scopeId: limit.scopeId,
    limitNano: limit.limitNano,
    periodNumber,
    period: limit.period,
    spentNano,
    reservedNano: limit.reservedNano,
    remainingNano,
    binding: remainingNano < accountAvailable,
  };
}

/**
 * The money a request may hold: the account's available money, or the least that any limit over it leaves. Sets
 * `state.spendLimit` to that tightest limit (the one a refusal names) and returns every limit's period number.
 */
function applyLimits(
  state: AdmissionState,
  limits: readonly LockedLimit[],
  at: number,
  accountAvailable: bigint,
): LimitPeriod[] {
  const periods: LimitPeriod[] = [];
  let tightest: SpendLimitState | undefined;
  for (const limit of limits) {
    const { id, periodNumber, ...view } = limitState(limit, at, accountAvailable);
    periods.push({ id, periodNumber });
    if (tightest === undefined || view.remainingNano < tightest.remainingNano) tightest = view;
  }
  if (tightest !== undefined) {
    state.spendLimit = tightest;
    if (tightest.binding) state.availableNano = tightest.remainingNano;
  }
  return periods;
}

/**
 * What the planner sees, and what it decides; throws when an admitting plan asks for more than there is.
 * With spend limits, what the request may hold is the lower of the account's available money and the least any
 * limit over it leaves (free-allowance tokens never count against a money limit: only the money hold does).
 */
export function decideAdmission(
  account: LockedAccount,
  input: ReserveInput,
  limits: readonly LockedLimit[] = [],
): AdmissionDecision {
  const sameDay = account.freeDay === input.day;
  const freeSpent = sameDay ? account.freeUsed + account.freeReserved : 0;
  const accountAvailable = account.balance - account.reserved;
  const state: AdmissionState = {
    availableNano: accountAvailable,
    freeTokensLeft: Math.max(0, input.freeAllowanceTokens - freeSpent),
  };
  const periods = applyLimits(state, limits, input.createdAt, accountAvailable);
  const plan = input.plan(state);
  if (
    plan.admitted &&
    (plan.holdNano > state.availableNano || plan.freeTokens > state.freeTokensLeft || plan.holdNano < 0n)
  ) {
    throw new Error('Admission plan exceeds what the account has.');
  }
  return { sameDay, state, plan, ...(periods.length === 0 || !plan.admitted ? {} : { limits: periods }) };
}

/** The answer to an admitted request: its reservation as the hold was taken. */
export function admitted(
  input: ReserveInput,
  plan: Extract<AdmissionPlan, { admitted: true }>,
  limitHoldNano = 0n,
): ReserveResult {
  return {
    admitted: true,
    reservation: {
      requestId: input.requestId,
      accountId: input.accountId,
      holdNano: plan.holdNano,
      freeTokens: plan.freeTokens,
      freeDay: input.day,
      maxOutputTokens: plan.maxOutputTokens,
      ...(plan.coversLimit === undefined ? {} : { coversLimit: plan.coversLimit }),
      ...(plan.webSearches === undefined ? {} : { webSearches: plan.webSearches }),
      limitHoldNano,
    },
  };
}

/** The reservation a settlement claims (deleted in the same transaction), when the sweeper has not taken it. */
export interface ClaimedHold {
  holdNano: bigint;
  freeTokens: number;
  freeDay: number;
}

export interface SettlementAmounts {
  /** Released from `reserved`. */
  holdNano: bigint;
  /** Released from the free tokens reserved today (0 for a hold of an earlier day: that day's counters are gone). */
  heldFreeTokens: number;
  chargedNano: bigint;
  unbilledNano: bigint;
  unbilledTokens: number;
  /** Free tokens the reply used (the usage record's). */
  freeTokensUsed: number;
  /** Of those, what counts as used on the account's current free day (0 for a request of an earlier day). */
  freeTokensUsedToday: number;
  /** The limits the charge is added to, each at the request's period. */
  chargedLimits: LimitPeriod[];
}

/** What settlement needs besides the locked rows: the allowance, and the request's start (its day and key period). */
export interface SettlementContext {
  freeAllowanceTokens: number;
  /** The request's start (epoch ms): its free day when no hold says otherwise, and its limits' periods. */
  startedAt: number;
}

/**
 * What a settlement may take (docs/billing.md#how-a-request-is-billed): the free tokens its hold carries (taken from
 * the allowance of the hold's day, so they price the reply even when the account has moved on to a new day since)
 * plus what is left of that day's allowance while the account's counters are still that day's; the balance; and each
 * spend limit of the request's period, less what it has spent (a request of an older period than a limit's counter
 * counts against nothing: its charge is not added to it). `charged` lists the limits its charge is added to.
 */
export function settlementRoom(
  account: LockedAccount,
  claimed: ClaimedHold | undefined,
  context: SettlementContext,
  limits: readonly LockedLimit[],
): { room: SettlementRoom; sameDay: boolean; heldFree: number; charged: LimitPeriod[] } {
  const heldFree = claimed === undefined ? 0 : claimed.freeTokens;
  const sameDay = (claimed?.freeDay ?? Math.floor(context.startedAt / MS_PER_DAY)) === account.freeDay;
  const leftToday = sameDay ? Math.max(0, context.freeAllowanceTokens - account.freeUsed - account.freeReserved) : 0;
  const moneyNano = [account.balance];
  const charged: LimitPeriod[] = [];
  for (const limit of limits) {
    const period = spendPeriodNumber(limit.period, context.startedAt);
    if (limit.periodStart > period) continue;
    moneyNano.push(limit.limitNano - (limit.periodStart === period ? limit.usedNano : 0n));
    charged.push({ id: limit.id, periodNumber: period });
  }
  return { room: { freeTokens: heldFree + leftToday, moneyNano }, sameDay, heldFree, charged };
}

/**
 * Splits a reply's usage within its settlement's room (`price` is billing/usage-split.ts's rule) and says what moves:
 * the hold released, the charge, today's free counters. Throws when the split takes more than the room has (a broken
 * money rule never reaches the database).
 */
export function settlementAmounts(
  account: LockedAccount,
  claimed: ClaimedHold | undefined,
  price: SettlementPricer,
  context: SettlementContext,
  limits: readonly LockedLimit[] = [],
): SettlementAmounts {
  const { room, sameDay, heldFree, charged } = settlementRoom(account, claimed, context, limits);
  const split = price(room);
  if (
    split.billedNano < 0n ||
    split.unbilledNano < 0n ||
    split.unbilledTokens < 0 ||
    split.freeTokens < 0 ||
    split.freeTokens > room.freeTokens ||
    room.moneyNano.some((limit) => split.billedNano > (limit > 0n ? limit : 0n))
  ) {
    throw new Error('A settlement split exceeds what the account, its allowance or its limits allow.');
  }
  return {
    holdNano: claimed === undefined ? 0n : claimed.holdNano,
    heldFreeTokens: sameDay ? heldFree : 0,
    chargedNano: split.billedNano,
    unbilledNano: split.unbilledNano,
    unbilledTokens: split.unbilledTokens,
    freeTokensUsed: split.freeTokens,
    freeTokensUsedToday: sameDay ? split.freeTokens : 0,
    chargedLimits: charged,
  };
}

/**
 * The usage row as settled: its charge, free tokens and what could not be charged (the reported tokens no allowance,
 * balance or limit covered, plus any output the vendor produced past a refused slice, which was never billable).
 */
export function settledUsage(usage: UsageRecord, amounts: SettlementAmounts): UsageRecord {
  return {
    ...usage,
    costNano: amounts.chargedNano,
    freeTokens: amounts.freeTokensUsed,
    unbilledNano: amounts.unbilledNano,
    unbilledTokens: (usage.unbilledTokens ?? 0) + amounts.unbilledTokens,
  };
}

/** A usage line goes to the ledger when the request was charged, or when part of it could not be (a shortfall). */
export function needsLedgerLine(amounts: SettlementAmounts): boolean {
  return amounts.chargedNano > 0n || amounts.unbilledNano > 0n || amounts.unbilledTokens > 0;
}

export function settledResult(amounts: SettlementAmounts): SettleResult {
  return {
    settled: true,
    chargedNano: amounts.chargedNano,
    unbilledNano: amounts.unbilledNano,
    unbilledTokens: amounts.unbilledTokens,
    freeTokensUsed: amounts.freeTokensUsed,
  };
}

/**
 * The state a slice of output is planned from (the planner is billing/slice-grant.ts's, passed in as `input.plan`):
 * free tokens only while the account's free counters are today's and the hold took its free tokens today; money the
 * lower of the account's available money and what every limit over the request leaves, exactly as at admission: the
 * slice's money counts against each limit in the same step. Throws when the plan asks for more than there is.
 */
export function planSlice(
  account: LockedAccount,
  input: SliceInput,
  holdFreeDay: number,
  limits: readonly LockedLimit[] = [],
): { state: AdmissionState; plan: SlicePlan; limits: LimitPeriod[] } {
  const sameDay = account.freeDay === input.day && holdFreeDay === input.day;
  const accountAvailable = account.balance - account.reserved;
  const state: AdmissionState = {
    availableNano: accountAvailable,
    freeTokensLeft: sameDay ? Math.max(0, input.freeAllowanceTokens - account.freeUsed - account.freeReserved) : 0,
  };
  const periods = applyLimits(state, limits, input.at ?? input.day * MS_PER_DAY, accountAvailable);
  const plan = input.plan(state);
  if (!plan.granted) return { state, plan, limits: periods };
  if (
    plan.tokens < 1 ||
    plan.freeTokens < 0 ||
    plan.freeTokens > Math.min(plan.tokens, state.freeTokensLeft) ||
    plan.holdNano < 0n ||
    plan.holdNano > (state.availableNano > 0n ? state.availableNano : 0n)
  ) {
    throw new Error('Slice plan exceeds what the account has.');
  }
  return { state, plan, limits: periods };
}

/** Ledger ids sort by time, so `before` pagination is a plain comparison. */
export function ledgerId(at: number): string {
  return `le_${at.toString().padStart(15, '0')}_${randomHex(6)}`;
}
