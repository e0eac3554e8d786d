import { randomHex } from '../ids/random-hex.js';
import { fromMoneyColumn } from './money-sql.js';
import { spendPeriodNumber, SPEND_PERIODS, type SpendPeriod } from './key-permission-types.js';
import type {
  AdmissionPlan,
  AdmissionState,
  KeySpendState,
  ReserveInput,
  ReserveResult,
  SettlementPricer,
  SliceInput,
} from './billing-types.js';
import type { AccountMoneySnapshot } from './types.js';

const MS_PER_DAY = 86_400_000;

/**
 * The arithmetic of admission and settlement, shared by every storage implementation (the Kysely repository
 * used by both dialects, and SQLite's synchronous hot path), so the money rules exist once and only the SQL
 * differs. Every function here is pure: the caller reads the account under its lock and writes the result.
 */

/** The account's money and free-allowance counters, as read under the account's lock. */
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
  /** The key's spend limit, when it has one: its period number now, and what the hold counts against it. */
  key?: { period: number; holdNano: bigint };
}

/** A key's spend-limit columns as every storage path selects them (money as text, see money-sql.ts). */
export interface KeySpendRow {
  spend_limit: string | null;
  spend_period: string | null;
  spend_period_start: number | string;
  spend_used: string;
  spend_reserved: string;
}

/** A key's spend limit and counters, as read under its account's lock; null when the key has no limit. */
export interface LockedKeySpend {
  limitNano: bigint;
  period: SpendPeriod;
  periodStart: number;
  usedNano: bigint;
  reservedNano: bigint;
}

export function toLockedKeySpend(row: KeySpendRow | undefined): LockedKeySpend | null {
  if (
    row === undefined ||
    row.spend_limit === null ||
    row.spend_period === null ||
    !(SPEND_PERIODS as readonly string[]).includes(row.spend_period)
  )
    return null;
  return {
    limitNano: fromMoneyColumn(row.spend_limit),
    period: row.spend_period as SpendPeriod,
    periodStart: Number(row.spend_period_start),
    usedNano: fromMoneyColumn(row.spend_used),
    reservedNano: fromMoneyColumn(row.spend_reserved),
  };
}

/** The key's limit as the planner sees it at `at`: an older period's settled spend counts as nothing. */
export function keySpendState(
  key: LockedKeySpend,
  at: number,
  accountAvailable: bigint,
): KeySpendState & { periodNumber: number } {
  const periodNumber = spendPeriodNumber(key.period, at);
  const spentNano = key.periodStart >= periodNumber ? key.usedNano : 0n;
  const left = key.limitNano - spentNano - key.reservedNano;
  const remainingNano = left > 0n ? left : 0n;
  return {
    limitNano: key.limitNano,
    period: key.period,
    spentNano,
    reservedNano: key.reservedNano,
    remainingNano,
    binding: remainingNano < accountAvailable,
    periodNumber,
  };
}

/**
 * What the planner sees, and what it decides; throws when an admitting plan asks for more than there is.
 * With a key spend limit, what the request may hold is the lower of the account's available money and the
 * key's remaining limit (free-allowance tokens never count against a money limit: only the money hold does).
 */
export function decideAdmission(
  account: LockedAccount,
  input: ReserveInput,
  key: LockedKeySpend | null = null,
): AdmissionDecision {
  const sameDay = account.freeDay === input.day;
  const freeSpent = sameDay ? account.freeUsed + account.freeReserved : 0;
  const accountAvailable = account.balance - account.reserved;
  const state: AdmissionState = {
    availableNano: accountAvailable,
    freeTokensLeft: Math.max(0, input.freeAllowanceTokens - freeSpent),
  };
  let keyPeriod: number | undefined;
  if (key !== null) {
    const { periodNumber, ...keySpend } = keySpendState(key, input.createdAt, accountAvailable);
    keyPeriod = periodNumber;
    state.keySpend = keySpend;
    if (keySpend.binding) state.availableNano = keySpend.remainingNano;
  }
  const plan = input.plan(state);
  if (
    plan.admitted &&
    (plan.holdNano > state.availableNano || plan.freeTokens > state.freeTokensLeft || plan.holdNano < 0n)
  ) {
    throw new Error('Admission plan exceeds what the account has.');
  }
  return {
    sameDay,
    state,
    plan,
    ...(keyPeriod === undefined || !plan.admitted ? {} : { key: { period: keyPeriod, holdNano: plan.holdNano } }),
  };
}

/** The answer to an admitted request: its reservation as the hold was taken. */
export function admitted(
  input: ReserveInput,
  plan: Extract<AdmissionPlan, { admitted: true }>,
  keyHoldNano = 0n,
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
      keyHoldNano,
    },
  };
}

/** The reservation a settlement claims (deleted in the same transaction), when the sweeper has not taken it. */
export interface ClaimedHold {
  holdNano: bigint;
  /** What the hold counted against its key's spend limit (released from the key's counter). */
  keyHoldNano?: bigint;
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
  /** Free tokens the reply used (the usage record's), out of its hold's, whichever day the hold was taken. */
  freeTokensUsed: number;
  /** Of those, what counts as used on the account's current free day (0 for a hold of an earlier day). */
  freeTokensUsedToday: number;
}

/**
 * Prices a reply against its claimed hold. The free tokens the hold carries are the reply's, taken from the
 * allowance of the day the hold was taken: they price it even when the account has moved on to a new day since
 * (a stream across midnight, a settlement replayed from the journal the next day), and only the current day's
 * counters move. The charge never takes the balance below zero: what it cannot cover is recorded as unbilled.
 */
export function settlementAmounts(
  account: LockedAccount,
  claimed: ClaimedHold | undefined,
  price: SettlementPricer,
): SettlementAmounts {
  const holdNano = claimed === undefined ? 0n : claimed.holdNano;
  const heldFree = claimed === undefined ? 0 : claimed.freeTokens;
  const today = claimed !== undefined && claimed.freeDay === account.freeDay;
  const { chargeNano, freeTokensUsed } = price(heldFree);
  const chargedNano = chargeNano <= account.balance ? chargeNano : account.balance > 0n ? account.balance : 0n;
  const freeUsed = heldFree === 0 ? 0 : freeTokensUsed;
  return {
    holdNano,
    heldFreeTokens: today ? heldFree : 0,
    chargedNano,
    unbilledNano: chargeNano - chargedNano,
    freeTokensUsed: freeUsed,
    freeTokensUsedToday: today ? freeUsed : 0,
  };
}

export type SlicePlan =
  | {
      granted: true;
      tokens: number;
      holdNano: bigint;
      freeTokens: number /** The key's spend period and what of the hold counts against it. */;
      key?: { period: number; holdNano: bigint };
    }
  | { granted: false; reason: 'balance' | 'key_spend_limit' };

/**
 * One more slice of output: free tokens first (only while the account's free counters are today's and the hold
 * took its free tokens today), then money; less than asked when only that is left; refused when not one token is.
 * With a key spend limit (docs/architecture.md#key-scopes-and-limits), the money is the lower of the account's
 * available money and the key's remaining limit, exactly as at admission: the slice's money counts against the key in
 * the same step.
 */
export function planSlice(
  account: LockedAccount,
  input: SliceInput,
  holdFreeDay: number,
  key: LockedKeySpend | null = null,
): { state: AdmissionState; plan: SlicePlan } {
  const sameDay = account.freeDay === input.day && holdFreeDay === input.day;
  const accountAvailable = account.balance - account.reserved;
  const state: AdmissionState = {
    availableNano: accountAvailable,
    freeTokensLeft: sameDay ? Math.max(0, input.freeAllowanceTokens - account.freeUsed - account.freeReserved) : 0,
  };
  let keyPeriod: number | undefined;
  if (key !== null) {
    const { periodNumber, ...keySpend } = keySpendState(key, input.at ?? input.day * MS_PER_DAY, accountAvailable);
    keyPeriod = periodNumber;
    state.keySpend = keySpend;
    if (keySpend.binding) state.availableNano = keySpend.remainingNano;
  }
  const free = Math.min(state.freeTokensLeft, input.tokens);
  const wantedPaid = input.tokens - free;
  const price = input.outputPriceNano;
  const affordablePaid =
    state.availableNano <= 0n
      ? 0
      : price === 0n
        ? wantedPaid
        : Number(state.availableNano / price < BigInt(wantedPaid) ? state.availableNano / price : BigInt(wantedPaid));
  const paid = Math.min(wantedPaid, affordablePaid);
  const tokens = free + paid;
  if (tokens < 1)
    return {
      state,
      plan: { granted: false, reason: state.keySpend?.binding === true ? 'key_spend_limit' : 'balance' },
    };
  const holdNano = BigInt(paid) * price;
  return {
    state,
    plan: {
      granted: true,
      tokens,
      holdNano,
      freeTokens: free,
      ...(keyPeriod === undefined ? {} : { key: { period: keyPeriod, holdNano } }),
    },
  };
}

/** Ledger ids sort by time, so `before` pagination is a plain comparison. */
export function ledgerId(at: number): string {
  return `le_${at.toString().padStart(15, '0')}_${randomHex(6)}`;
}
