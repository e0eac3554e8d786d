import { api } from './client';

export type AlertKind = 'low_balance' | 'limit_threshold';
export type LimitScope = 'organisation' | 'project' | 'key';
export type LimitPeriod = 'day' | 'week' | 'month';

/** A rule as `/api/alerts` shows it: money as exact decimal USD, never its webhook's signing secret. */
export interface AlertRule {
  id: string;
  kind: AlertKind;
  amountUsd: string | null;
  thresholdPercent: number | null;
  scope: LimitScope | null;
  scopeId: string | null;
  period: LimitPeriod | null;
  emailEnabled: boolean;
  /** Null: the organisation's owners, admins and billing members. */
  emailTo: string[] | null;
  /** Without its query. */
  webhookUrl: string | null;
  armedAt: number;
  createdAt: number;
  updatedAt: number;
}

export interface AlertFiring {
  id: string;
  ruleId: string;
  type: 'alert.low_balance' | 'alert.limit_threshold' | null;
  periodStart: number;
  firedAt: number;
  balanceUsd: string | null;
  spentUsd: string | null;
}

export interface AlertDelivery {
  id: string;
  firingId: string;
  ruleId: string;
  channel: 'email' | 'webhook';
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  statusCode: number | null;
  error: string | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
}

export interface NewAlertRule {
  kind: AlertKind;
  amountUsd?: string;
  thresholdPercent?: number;
  scope?: LimitScope;
  scopeId?: string | null;
  period?: LimitPeriod;
  emailEnabled?: boolean;
  emailTo?: string[] | null;
  webhookUrl?: string | null;
}

export const alerts = {
  overview: () =>
    api<{ rules: AlertRule[]; firings: AlertFiring[]; deliveries: AlertDelivery[] }>('GET', '/api/alerts'),
  create: (rule: NewAlertRule) =>
    api<{ rule: AlertRule; webhookSecret: string | null }>('POST', '/api/alerts/rules', rule),
  update: (id: string, changes: Omit<NewAlertRule, 'kind'>) =>
    api<{ rule: AlertRule }>('PATCH', `/api/alerts/rules/${encodeURIComponent(id)}`, changes),
  remove: (id: string) => api<{ deleted: true }>('DELETE', `/api/alerts/rules/${encodeURIComponent(id)}`),
};
