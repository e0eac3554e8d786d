import { GatewayError } from '../canonical/errors.js';

/**
 * What a key may do (docs/architecture.md#key-scopes-and-limits): its scopes, the models it may use, its spend limit
 * and its own rate limits. Plain data with no storage or HTTP types: the repositories store it, the API parses it, the
 * route guard, the pipeline and billing enforce it.
 */

/** Every scope a key can carry. A key with all of them is the specification's standard key (`full`). */
export const API_SCOPES = ['models:use', 'usage:read', 'keys:manage', 'account:redeem'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/** `read_only`: usage, ledger and account reads only. */
export const READ_ONLY_SCOPES: readonly ApiScope[] = ['usage:read'];

export const SPEND_PERIODS = ['day', 'month', 'total'] as const;
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

export const FULL_PERMISSIONS: KeyPermissions = Object.freeze({
  scopes: null,
  models: null,
  spendLimit: null,
  rateLimit: null,
});

export function isApiScope(value: string): value is ApiScope {
  return (API_SCOPES as readonly string[]).includes(value);
}

export function hasScope(permissions: KeyPermissions, scope: ApiScope): boolean {
  return permissions.scopes === null || permissions.scopes.includes(scope);
}

/** The scopes of a key, spelt out (`full` keys list every scope). */
export function effectiveScopes(permissions: KeyPermissions): readonly ApiScope[] {
  return permissions.scopes ?? API_SCOPES;
}

export function modelAllowed(permissions: KeyPermissions, model: { id: string; family: string }): boolean {
  const allowed = permissions.models;
  return allowed === null || allowed.includes(model.id) || allowed.includes(model.family);
}

/** The 403 for a model the key may not use, naming the ones it may (before anything is held or sent). */
export function assertModelAllowed(permissions: KeyPermissions, model: { id: string; family: string }): void {
  if (modelAllowed(permissions, model)) return;
  throw new GatewayError(
    'permission_denied',
    `This API key may not use the model '${model.id}'. It may use: ${(permissions.models ?? []).join(', ')}.`,
    { param: 'model' },
  );
}

/** The 403 for a route whose scope the key lacks: one of `scopes` (or all of them, with `all`). */
export function missingScope(scopes: readonly ApiScope[], all: boolean): GatewayError {
  const named = scopes.map((scope) => `'${scope}'`).join(all ? ' and ' : ' or ');
  const noun = scopes.length > 1 && all ? 'scopes' : 'scope';
  return new GatewayError('permission_denied', `This API key lacks the ${noun} ${named} that this endpoint needs.`);
}

const MS_PER_DAY = 86_400_000;

/** The period a moment falls in: UTC day number, UTC month number (year*12 + month), or 0 for `total`. */
export function spendPeriodNumber(period: SpendPeriod, at: number): number {
  if (period === 'day') return Math.floor(at / MS_PER_DAY);
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
  if (period === 'month') {
    const date = new Date(at);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  }
  return null;
}

/** The first UTC day number of the period `at` falls in (for summing the daily rollup), or null for `total`. */
export function spendPeriodFirstDay(period: SpendPeriod, at: number): number | null {
  if (period === 'day') return Math.floor(at / MS_PER_DAY);
  if (period === 'month') {
    const date = new Date(at);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / MS_PER_DAY;
  }
  return null;
}

/** Settled spend of the current period as the counters say (an older period's counter means nothing spent yet). */
export function currentPeriodSpend(limit: KeySpendLimit, counters: KeySpendCounters, at: number): bigint {
  return counters.periodStart === spendPeriodNumber(limit.period, at) ? counters.usedNano : 0n;
}

/**
 * Why `child` would be more than `parent` (no escalation through key creation): the field name at fault, or
 * null when every permission of the child is within the parent's. A spend limit is within another when its
 * period is the same and its amount is not larger; rate limits when not larger.
 */
export function exceedsPermissions(
  child: KeyPermissions,
  parent: KeyPermissions,
  familyOf: (modelId: string) => string | undefined,
): string | null {
  if (parent.scopes !== null && effectiveScopes(child).some((scope) => !parent.scopes!.includes(scope)))
    return 'scopes';
  if (parent.models !== null) {
    if (child.models === null) return 'models';
    // A family word is within the parent only when the parent allows the whole family.
    if (
      child.models.some(
        (entry) => !parent.models!.includes(entry) && !isWithinFamilies(entry, parent.models!, familyOf),
      )
    )
      return 'models';
  }
  if (parent.spendLimit !== null) {
    if (
      child.spendLimit === null ||
      child.spendLimit.period !== parent.spendLimit.period ||
      child.spendLimit.limitNano > parent.spendLimit.limitNano
    )
      return 'spend_limit';
  }
  const parentRate = parent.rateLimit;
  if (parentRate !== null) {
    const childRate = child.rateLimit;
    if (
      parentRate.requestsPerMinute !== null &&
      (childRate?.requestsPerMinute == null || childRate.requestsPerMinute > parentRate.requestsPerMinute)
    )
      return 'rate_limit';
    if (
      parentRate.tokensPerMinute !== null &&
      (childRate?.tokensPerMinute == null || childRate.tokensPerMinute > parentRate.tokensPerMinute)
    )
      return 'rate_limit';
  }
  return null;
}

function isWithinFamilies(
  entry: string,
  allowed: readonly string[],
  familyOf: (id: string) => string | undefined,
): boolean {
  const family = familyOf(entry);
  return family !== undefined && allowed.includes(family);
}
