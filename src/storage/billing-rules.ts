import { randomHex } from '../ids/random-hex.js';
import { fromMoneyColumn } from './money-sql.js';
import type { AdmissionPlan, AdmissionState, ReserveInput, ReserveResult, SettlementPricer, SliceInput } from './billing-types.js';
import type { AccountMoneySnapshot } from './types.js';

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
}

/** What the planner sees, and what it decides; throws when an admitting plan asks for more than there is. */
export function decideAdmission(account: LockedAccount, input: ReserveInput): AdmissionDecision {
  const sameDay = account.freeDay === input.day;
  const freeSpent = sameDay ? account.freeUsed + account.freeReserved : 0;
  const state = {
    availableNano: account.balance - account.reserved,
    freeTokensLeft: Math.max(0, input.freeAllowanceTokens - freeSpent),
  };
  const plan = input.plan(state);
  if (plan.admitted && (plan.holdNano > state.availableNano || plan.freeTokens > state.freeTokensLeft || plan.holdNano < 0n)) {
    throw new Error('Admission plan exceeds what the account has.');
  }
  return { sameDay, state, plan };
}

/** The answer to an admitted request: its reservation as the hold was taken. */
export function admitted(input: ReserveInput, plan: Extract<AdmissionPlan, { admitted: true }>): ReserveResult {
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
export function settlementAmounts(account: LockedAccount, claimed: ClaimedHold | undefined, price: SettlementPricer): SettlementAmounts {
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

export type SlicePlan = { granted: true; tokens: number; holdNano: bigint; freeTokens: number } | { granted: false };

/**
 * One more slice of output: free tokens first (only while the account's free counters are today's and the hold
 * took its free tokens today), then money; less than asked when only that is left; refused when not one token is.
 */
export function planSlice(account: LockedAccount, input: SliceInput, holdFreeDay: number): { state: AdmissionState; plan: SlicePlan } {
  const sameDay = account.freeDay === input.day && holdFreeDay === input.day;
  const state: AdmissionState = {
    availableNano: account.balance - account.reserved,
    freeTokensLeft: sameDay ? Math.max(0, input.freeAllowanceTokens - account.freeUsed - account.freeReserved) : 0,
  };
  const free = Math.min(state.freeTokensLeft, input.tokens);
  const wantedPaid = input.tokens - free;
  const price = input.outputPriceNano;
  const affordablePaid = state.availableNano <= 0n ? 0 : price === 0n ? wantedPaid : Number(state.availableNano / price < BigInt(wantedPaid) ? state.availableNano / price : BigInt(wantedPaid));
  const paid = Math.min(wantedPaid, affordablePaid);
  const tokens = free + paid;
  if (tokens < 1) return { state, plan: { granted: false } };
  return { state, plan: { granted: true, tokens, holdNano: BigInt(paid) * price, freeTokens: free } };
}

/** Ledger ids sort by time, so `before` pagination is a plain comparison. */
export function ledgerId(at: number): string {
  return `le_${at.toString().padStart(15, '0')}_${randomHex(6)}`;
}
