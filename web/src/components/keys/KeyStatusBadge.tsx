import type { ApiKey } from '../../api/types';
import { formatDateTime } from '../../lib/format';
import { StatusBadge } from '../StatusBadge';

/**
 * What a request with the key gets now: "Active" only when it is served. A key whose spend limit is used up is
 * refused (403 `key_spend_limit_reached`) until its period resets, so it says so and until when: as soon as what is
 * left is less than the smallest request holds at admission (the server's `limitReached`), not only at 100 %.
 */
export function keyStatusLabel(apiKey: ApiKey): { status: string; label: string } {
  if (apiKey.status === 'revoked') return { status: 'revoked', label: 'Revoked' };
  if (apiKey.status === 'expired') return { status: 'expired', label: 'Expired' };
  const limit = apiKey.spendLimit;
  if (limit?.limitReached === true) {
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
