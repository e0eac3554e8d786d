import { GatewayError } from '../canonical/errors.js';
import type { SpendLimitState } from '../storage/billing-types.js';
import { spendPeriodResetsAt } from '../storage/key-permission-types.js';
import { formatUsd } from './money.js';

const OWNER_WORDS = {
  key: "This API key's",
  project: "This key's project's",
  organisation: "This organisation's",
} as const;

/**
 * The 403 of a request a spend limit cannot cover (docs/billing.md#spend-limits), naming the limit (its level and
 * period) and saying what is spent, held and when it resets. A key's limit keeps its own code, as before there were
 * other levels; a project's or organisation's is `spend_limit_reached`. `details` names the limit for programs.
 */
export function spendLimitReached(limit: SpendLimitState, now: number): GatewayError {
  const resetsAt = spendPeriodResetsAt(limit.period, now);
  const per = limit.period === 'total' ? 'in total' : `per ${limit.period} (UTC)`;
  const when =
    resetsAt === null
      ? 'It does not reset (a total limit): raise it in the dashboard or with PATCH /v1/keys/{id}.'
      : `It resets at ${new Date(resetsAt).toISOString()}.`;
  return new GatewayError(
    limit.scope === 'key' ? 'key_spend_limit_reached' : 'spend_limit_reached',
    `${OWNER_WORDS[limit.scope]} spend limit of $${formatUsd(limit.limitNano)} ${per} is reached: $${formatUsd(limit.spentNano)} spent and $${formatUsd(limit.reservedNano)} held by requests in flight leave $${formatUsd(limit.remainingNano)}, less than this request may cost. ${when}`,
    {
      details: {
        limit_scope: limit.scope,
        limit_period: limit.period,
        ...(resetsAt === null ? {} : { resets_at: new Date(resetsAt).toISOString() }),
      },
    },
  );
}
