import type { ApiKey } from '../../api/types';
import { formatDateTime } from '../../lib/format';
import { toNano } from '../../lib/money';
import { StatusBadge } from '../StatusBadge';

/**
 * What a request with the key gets now: "Active" only when it is served. A key whose spend limit is used up is
 * refused (403 `key_spend_limit_reached`) until its period resets, so it says so and until when.
 */
export function keyStatusLabel(apiKey: ApiKey): { status: string; label: string } {
  if (apiKey.status === 'revoked') return { status: 'revoked', label: 'Revoked' };
  if (apiKey.status === 'expired') return { status: 'expired', label: 'Expired' };
  const limit = apiKey.spendLimit;
  if (limit !== null && toNano(limit.spentUsd) >= toNano(limit.usd)) {
    return {
      status: 'disabled',
      label: limit.resetsAt === null ? 'Limit reached' : `Limit reached until ${formatDateTime(limit.resetsAt)}`,
    };
  }
  return { status: 'active', label: 'Active' };
}

export function KeyStatusBadge({ apiKey }: { apiKey: ApiKey }) {
  const { status, label } = keyStatusLabel(apiKey);
  return <StatusBadge status={status} label={label} />;
}
