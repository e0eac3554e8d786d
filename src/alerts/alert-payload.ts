import { describeUsd, formatUsd, parseUsd } from '../billing/money.js';
import type { AlertRule } from '../storage/alert-types.js';

/**
 * The JSON every channel of a firing carries (docs/budget-alerts.md#payload): the webhook's exact body, and the
 * facts the mail is written from. Money as exact decimal USD strings, times in epoch ms.
 */
export interface AlertEvent {
  id: string;
  type: 'alert.low_balance' | 'alert.limit_threshold';
  created_at: number;
  organisation_id: string;
  rule: {
    id: string;
    kind: AlertRule['kind'];
    amount_usd: string | null;
    threshold_percent: number | null;
    scope: AlertRule['scope'];
    scope_id: string | null;
    period: AlertRule['period'];
  };
  /** The start of the period this firing is for (a low-balance rule's arming, a limit's period). */
  period_start: number;
  balance_usd?: string;
  spent_usd?: string;
  limit_usd?: string;
}

export function ruleSummary(rule: AlertRule): AlertEvent['rule'] {
  return {
    id: rule.id,
    kind: rule.kind,
    amount_usd: rule.amountNano === null ? null : formatUsd(rule.amountNano),
    threshold_percent: rule.thresholdPercent,
    scope: rule.scope,
    scope_id: rule.scopeId,
    period: rule.period,
  };
}

export function lowBalanceEvent(id: string, rule: AlertRule, balanceNano: bigint, now: number): AlertEvent {
  return {
    id,
    type: 'alert.low_balance',
    created_at: now,
    organisation_id: rule.organisationId,
    rule: ruleSummary(rule),
    period_start: rule.armedAt,
    balance_usd: formatUsd(balanceNano),
  };
}

export function limitThresholdEvent(
  id: string,
  rule: AlertRule,
  limit: { usedNano: bigint; limitNano: bigint; periodStart: number; resetsAt: number | null },
  now: number,
): AlertEvent {
  return {
    id,
    type: 'alert.limit_threshold',
    created_at: now,
    organisation_id: rule.organisationId,
    rule: ruleSummary(rule),
    period_start: limit.periodStart,
    spent_usd: formatUsd(limit.usedNano),
    limit_usd: formatUsd(limit.limitNano),
  };
}

/** A limit's period in words: "day" + "ly" would read "dayly". */
const PERIOD_ADJECTIVES: Readonly<Record<NonNullable<AlertEvent['rule']['period']>, string>> = {
  day: 'daily',
  week: 'weekly',
  month: 'monthly',
};

/** The mail of a firing: a subject and a plain-text body, in words. */
export function alertMail(event: AlertEvent, organisationName: string): { subject: string; text: string } {
  if (event.type === 'alert.low_balance') {
    const below = usd(event.rule.amount_usd);
    const balance = usd(event.balance_usd);
    return {
      subject: `Tollgate: ${organisationName}'s balance is below ${below}`,
      text: [
        `The balance of ${organisationName} is ${balance}, below the ${below} your alert watches for.`,
        'Top up in the dashboard to keep requests flowing; the alert fires again after the balance has recovered.',
        '',
        `Alert ${event.rule.id}, event ${event.id}.`,
      ].join('\n'),
    };
  }
  const spent = usd(event.spent_usd);
  const limit = usd(event.limit_usd);
  const every = event.rule.period === null ? '' : `${PERIOD_ADJECTIVES[event.rule.period]} `;
  return {
    subject: `Tollgate: ${organisationName} reached ${event.rule.threshold_percent}% of a ${every}limit`,
    text: [
      `${organisationName} has spent ${spent} of the ${limit} ${every}limit of its ${event.rule.scope}` +
        `${event.rule.scope_id === null ? '' : ` ${event.rule.scope_id}`}: ${event.rule.threshold_percent}% or more.`,
      '',
      `Alert ${event.rule.id}, event ${event.id}.`,
    ].join('\n'),
  };
}

/** The payload's decimal USD back in nano-USD, without a float, for the mail's wording. */
function usd(text: string | null | undefined): string {
  if (text === null || text === undefined) return '';
  return describeUsd(text.startsWith('-') ? -parseUsd(text.slice(1)) : parseUsd(text));
}
