import type { KeySpendLimit } from '../../api/types';
import { formatDateTime } from '../../lib/format';

const PER: Record<KeySpendLimit['period'], string> = {
  day: 'today (UTC)',
  week: 'this week (UTC)',
  month: 'this month (UTC)',
  total: 'in total',
};

/**
 * A key's spend this period against its limit: a meter (amber past 75 %, red past 95 %, like the allowance's)
 * and the figures. Money stays the exact decimal strings the API sends; only the meter's position is a float.
 */
export function KeySpendBar({ limit }: { limit: KeySpendLimit }) {
  const max = Number(limit.usd);
  const used = Number(limit.spentUsd) + Number(limit.heldUsd);
  return (
    <div className="key-spend">
      <meter
        className="meter"
        min={0}
        max={Math.max(max, 1e-9)}
        low={max * 0.75}
        high={max * 0.95}
        optimum={0}
        value={Math.min(used, max)}
        aria-label={`Spend ${PER[limit.period]} against the limit`}
      />
      <span className="small">
        ${limit.spentUsd} of ${limit.usd} {PER[limit.period]}
        {limit.heldUsd !== '0' && <span className="muted"> (+${limit.heldUsd} in flight)</span>}
      </span>
      {limit.resetsAt !== null && <span className="small muted"> · resets {formatDateTime(limit.resetsAt)}</span>}
    </div>
  );
}

/** One line of what a key may do, for the keys table. */
export function describeKeyAccess(key: {
  scopes: string[];
  models: string[] | null;
  rateLimit: { requestsPerMinute: number | null; tokensPerMinute: number | null } | null;
}): string {
  const parts: string[] = [];
  if (key.scopes.length === 4) parts.push('Full access');
  else if (key.scopes.length === 1 && key.scopes[0] === 'usage:read') parts.push('Read-only');
  else parts.push(key.scopes.join(', '));
  parts.push(key.models === null ? 'all models' : key.models.join(', '));
  if (key.rateLimit?.requestsPerMinute != null) parts.push(`${key.rateLimit.requestsPerMinute} req/min`);
  if (key.rateLimit?.tokensPerMinute != null) parts.push(`${key.rateLimit.tokensPerMinute} tok/min`);
  return parts.join(' · ');
}
