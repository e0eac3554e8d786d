/**
 * What a key may do, as stored with it: its scopes, the models it may use, its spend limit and its own rate limits,
 * and how the spend counters number their periods (the SQL compares those numbers). Plain data: the rules over it
 * (scope checks, the model allowlist, no escalation) are keys/key-permissions.ts.
 */

/** Every scope a key can carry. A key with all of them is the specification's standard key (`full`). */
export const API_SCOPES = ['models:use', 'usage:read', 'keys:manage', 'account:redeem', 'audit:read'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

export const SPEND_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type SpendPeriod = (typeof SPEND_PERIODS)[number];

export interface KeySpendLimit {
  /** nano-USD per period. */
  limitNano: bigint;
  period: SpendPeriod;
}

export interface KeyRateLimit {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

export interface KeyPermissions {
  /** Null: every scope (`full`), including scopes added later. */
  scopes: readonly ApiScope[] | null;
  /** Public model ids and/or family words; null: every model. */
  models: readonly string[] | null;
  spendLimit: KeySpendLimit | null;
  /** Below the account's tier; null: the tier's limits alone. */
  rateLimit: KeyRateLimit | null;
}

/** The key's spend counters as stored (see migration 0007): meaningful while it has a spend limit. */
export interface KeySpendCounters {
  /** The period `usedNano` belongs to (`spendPeriodNumber`). */
  periodStart: number;
  usedNano: bigint;
  /** Held by requests in flight. */
  reservedNano: bigint;
}

/** One of a key's spend limits (0021-spend-limits) with its counters as stored. */
export interface KeyLimit extends KeySpendLimit, KeySpendCounters {}

export const FULL_PERMISSIONS: KeyPermissions = Object.freeze({
  scopes: null,
  models: null,
  spendLimit: null,
  rateLimit: null,
});

export function isApiScope(value: string): value is ApiScope {
  return (API_SCOPES as readonly string[]).includes(value);
}

const MS_PER_DAY = 86_400_000;

/** Day 0 (1970-01-01) was a Thursday: weeks start on Monday, 3 days later than day 0's week would. */
const MONDAY_OFFSET_DAYS = 3;

/** The UTC week (from Monday 00:00 UTC) a day number falls in. */
function weekNumber(day: number): number {
  return Math.floor((day + MONDAY_OFFSET_DAYS) / 7);
}

/**
 * The period a moment falls in: UTC day number, UTC week number (weeks from Monday), UTC month number
 * (year*12 + month), or 0 for `total`.
 */
export function spendPeriodNumber(period: SpendPeriod, at: number): number {
  if (period === 'day') return Math.floor(at / MS_PER_DAY);
  if (period === 'week') return weekNumber(Math.floor(at / MS_PER_DAY));
  if (period === 'month') {
    const date = new Date(at);
    return date.getUTCFullYear() * 12 + date.getUTCMonth();
  }
  return 0;
}

/** The month number of a moment, as `spendPeriodNumber('month', at)` (SQL gets both day and month numbers). */
export function utcMonthNumber(at: number): number {
  return spendPeriodNumber('month', at);
}

/** When the period that `at` falls in ends (epoch ms), or null for `total`. */
export function spendPeriodResetsAt(period: SpendPeriod, at: number): number | null {
  if (period === 'day') return (Math.floor(at / MS_PER_DAY) + 1) * MS_PER_DAY;
  if (period === 'week') return ((weekNumber(Math.floor(at / MS_PER_DAY)) + 1) * 7 - MONDAY_OFFSET_DAYS) * MS_PER_DAY;
  if (period === 'month') {
    const date = new Date(at);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  }
  return null;
}

/** The first UTC day number of the period `at` falls in (for summing the daily rollup), or null for `total`. */
export function spendPeriodFirstDay(period: SpendPeriod, at: number): number | null {
  if (period === 'day') return Math.floor(at / MS_PER_DAY);
  if (period === 'week') return weekNumber(Math.floor(at / MS_PER_DAY)) * 7 - MONDAY_OFFSET_DAYS;
  if (period === 'month') {
    const date = new Date(at);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / MS_PER_DAY;
  }
  return null;
}
