import type { ColumnType } from 'kysely';
import type { LimitScope } from './spend-limit-types.js';

export { LIMIT_SCOPES, type LimitScope } from './spend-limit-types.js';

/** What a rule watches: the balance falling below an amount, or spend reaching a share of a limit. */
export type AlertKind = 'low_balance' | 'limit_threshold';
/** The periods an alert watches: a key's `total` limit has no period to fire once in. */
export const LIMIT_PERIODS = ['day', 'week', 'month'] as const;
export type LimitPeriod = (typeof LIMIT_PERIODS)[number];
export type AlertChannel = 'email' | 'webhook';
export type AlertDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One row of `alert_rules` (0022-budget-alerts), as the services use it. */
export interface AlertRule {
  id: string;
  organisationId: string;
  kind: AlertKind;
  /** low_balance: fire when the balance is below this (nano-USD). */
  amountNano: bigint | null;
  /** limit_threshold: fire when spend reaches this percentage of the limit. */
  thresholdPercent: number | null;
  scope: LimitScope | null;
  scopeId: string | null;
  period: LimitPeriod | null;
  emailEnabled: boolean;
  /** Listed addresses; null: the organisation's owners, admins and billing members. */
  emailTo: string[] | null;
  webhookUrl: string | null;
  /** Signs each webhook delivery; shown once, when the rule is created. */
  webhookSecret: string | null;
  /** The start of a low-balance rule's current period (epoch ms). */
  armedAt: number;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
}

export type NewAlertRule = Omit<AlertRule, 'updatedAt' | 'armedAt'>;

/** What an update may change; the kind and the secret stay. */
export type AlertRuleChanges = Partial<
  Pick<
    AlertRule,
    'amountNano' | 'thresholdPercent' | 'scope' | 'scopeId' | 'period' | 'emailEnabled' | 'emailTo' | 'webhookUrl'
  >
>;

/** A low-balance rule with its organisation's balance, and whether its current period has fired yet. */
export interface LowBalanceCandidate {
  rule: AlertRule;
  balanceNano: bigint;
  firedThisPeriod: boolean;
}

export interface AlertFiring {
  id: string;
  ruleId: string;
  organisationId: string;
  periodStart: number;
  firedAt: number;
  /** The JSON text every channel sends. */
  payload: string;
}

export interface AlertDelivery {
  id: string;
  firingId: string;
  ruleId: string;
  organisationId: string;
  channel: AlertChannel;
  status: AlertDeliveryStatus;
  attempts: number;
  statusCode: number | null;
  error: string | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
}

/** A delivery the worker claimed, with what it needs to send it (the rule is null once deleted). */
export interface ClaimedDelivery {
  delivery: AlertDelivery;
  payload: string;
  rule: AlertRule | null;
}

/** The outcome of one attempt: delivered, due again at `nextAttemptAt`, or given up (`nextAttemptAt` null). */
export interface DeliveryAttempt {
  delivered: boolean;
  statusCode: number | null;
  error: string | null;
  nextAttemptAt: number | null;
  at: number;
}

export interface AlertRepository {
  createRule(rule: NewAlertRule): Promise<AlertRule>;
  listRules(organisationId: string): Promise<AlertRule[]>;
  findRule(organisationId: string, id: string): Promise<AlertRule | null>;
  /** The rule after the change; null when the organisation has no such rule. */
  updateRule(organisationId: string, id: string, changes: AlertRuleChanges, now: number): Promise<AlertRule | null>;
  /** The deleted rule; null when there was none. Its firings and deliveries stay as history. */
  deleteRule(organisationId: string, id: string): Promise<AlertRule | null>;
  /** Limit-threshold rules of these organisations (all when null). */
  limitThresholdRules(organisationIds: readonly string[] | null): Promise<AlertRule[]>;
  /** Whether the rule has fired for the period starting at `periodStart`. */
  hasFired(ruleId: string, periodStart: number): Promise<boolean>;
  /** Low-balance rules with a channel, of these organisations (all when null), with each one's balance. */
  lowBalanceCandidates(organisationIds: readonly string[] | null): Promise<LowBalanceCandidate[]>;
  /**
   * Records the firing and queues one delivery per channel, in one transaction; false (and nothing written) when the
   * rule already fired for this period, here or on another instance.
   */
  fire(firing: AlertFiring, channels: readonly AlertChannel[]): Promise<boolean>;
  /** Starts a new period for a low-balance rule whose current one fired; false when another instance already did. */
  rearm(ruleId: string, armedAt: number, now: number): Promise<boolean>;
  /**
   * Up to `limit` pending deliveries due by `now`, each leased to `owner` until `now + leaseMs` (one conditional
   * update each, so two instances never hold the same delivery).
   */
  claimDue(owner: string, now: number, leaseMs: number, limit: number): Promise<ClaimedDelivery[]>;
  /** Stores an attempt's outcome while `owner` still holds the lease; false when it does not. */
  recordAttempt(id: string, owner: string, attempt: DeliveryAttempt): Promise<boolean>;
  recentFirings(organisationId: string, limit: number): Promise<AlertFiring[]>;
  recentDeliveries(organisationId: string, limit: number): Promise<AlertDelivery[]>;
}

export interface AlertRulesTable {
  id: string;
  organisation_id: string;
  kind: string;
  amount_nano: ColumnType<string | null, string | null | undefined, string | null>;
  threshold_percent: number | null;
  scope: string | null;
  scope_id: string | null;
  period: string | null;
  email_enabled: number;
  email_to: string | null;
  webhook_url: string | null;
  webhook_secret: string | null;
  armed_at: number;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface AlertFiringsTable {
  id: string;
  rule_id: string;
  organisation_id: string;
  period_start: number;
  fired_at: number;
  payload: string;
}

export interface AlertDeliveriesTable {
  id: string;
  firing_id: string;
  rule_id: string;
  organisation_id: string;
  channel: string;
  status: string;
  attempts: number;
  status_code: number | null;
  error: string | null;
  next_attempt_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  delivered_at: number | null;
  created_at: number;
}

export type AlertTables = {
  alert_rules: AlertRulesTable;
  alert_firings: AlertFiringsTable;
  alert_deliveries: AlertDeliveriesTable;
};
