import type { SpendPeriod } from './key-permission-types.js';

/**
 * Spend limits per period at three levels (docs/billing.md#spend-limits): an organisation's, a project's and a key's.
 * Each is money like the balance: checked and held in the same atomic step as the balance, slices included.
 */

export const LIMIT_SCOPES = ['organisation', 'project', 'key'] as const;
export type LimitScope = (typeof LIMIT_SCOPES)[number];

/** The periods a limit may have at a scope: a key keeps its older `total` limit; the other levels are per period. */
export function periodsOf(scope: LimitScope): readonly SpendPeriod[] {
  return scope === 'key' ? ['day', 'week', 'month', 'total'] : ['day', 'week', 'month'];
}

export function isLimitScope(value: string): value is LimitScope {
  return (LIMIT_SCOPES as readonly string[]).includes(value);
}

/** A limit as listed: its counters as they stand at the moment of the read. */
export interface SpendLimitRecord {
  id: string;
  organisationId: string;
  scope: LimitScope;
  /** The organisation's, project's or key's id. */
  scopeId: string;
  period: SpendPeriod;
  limitNano: bigint;
  /** Settled spend of the current period (0 once the stored counter's period is over). */
  usedNano: bigint;
  /** Held by requests in flight. */
  reservedNano: bigint;
  /** When the current period ends (epoch ms), null for `total`. */
  resetsAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface SpendLimitSelector {
  organisationId: string;
  scope: LimitScope;
  scopeId: string;
  period: SpendPeriod;
}

export interface SetSpendLimit extends SpendLimitSelector {
  limitNano: bigint;
  at: number;
}

export interface SpendLimitRepository {
  /**
   * The organisation's limits at every level, or those of one scope (and id): ordered by scope, id, period.
   * `at` decides which period's spend counts as used.
   */
  list(
    organisationId: string,
    at: number,
    filter?: { scope?: LimitScope; scopeId?: string },
  ): Promise<SpendLimitRecord[]>;
  /**
   * Sets (or replaces) one limit, under the wallet row's lock. A new limit starts from what its scope has settled
   * in the current period (the daily rollup); a changed one keeps its counters. Returns the limit before and after.
   */
  set(input: SetSpendLimit): Promise<{ before: SpendLimitRecord | null; after: SpendLimitRecord }>;
  /** Removes one limit, under the wallet row's lock; holds against it go with it. The limit as it was, or null. */
  clear(selector: SpendLimitSelector, at: number): Promise<SpendLimitRecord | null>;
}
