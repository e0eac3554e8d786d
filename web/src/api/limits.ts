import { api, query } from './client';

export type LimitScope = 'organisation' | 'project' | 'key';
export type LimitPeriod = 'day' | 'week' | 'month' | 'total';

/** A spend limit with where it stands this period: money as exact decimal USD strings. */
export interface SpendLimit {
  id: string;
  scope: LimitScope;
  scopeId: string;
  period: LimitPeriod;
  usd: string;
  usedUsd: string;
  heldUsd: string;
  remainingUsd: string;
  /** When the period ends (epoch ms); null for a key's `total`. */
  resetsAt: number | null;
  updatedAt: number;
}

const path = (scope: LimitScope, scopeId: string, period: LimitPeriod) =>
  `/api/limits/${encodeURIComponent(scope)}/${encodeURIComponent(scopeId)}/${encodeURIComponent(period)}`;

export const limits = {
  list: (filter: { scope?: LimitScope; scopeId?: string } = {}) =>
    api<{ limits: SpendLimit[] }>('GET', `/api/limits${query(filter)}`),
  set: (scope: LimitScope, scopeId: string, period: LimitPeriod, usd: string) =>
    api<{ limit: SpendLimit }>('PUT', path(scope, scopeId, period), { usd }),
  clear: (scope: LimitScope, scopeId: string, period: LimitPeriod) =>
    api<{ cleared: SpendLimit }>('DELETE', path(scope, scopeId, period)),
};
