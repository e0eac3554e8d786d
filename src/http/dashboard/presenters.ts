import { nextAllowanceReset, utcDayNumber } from '../../billing/free-allowance.js';
import { formatUsd } from '../../billing/money.js';
import type { AccountBalance, LedgerEntry } from '../../storage/billing-types.js';
import type { AccountRecord, ApiKeyRecord } from '../../storage/types.js';
import { presentDashboardPermissions } from '../key-permission-fields.js';
import { keyStatus } from '../keys-api.js';

/** The dashboard's JSON shapes (docs/dashboard-api.md): camelCase, times in epoch ms, money as exact USD strings. */

export function presentAccount(account: AccountRecord) {
  return { id: account.id, email: account.email, role: account.role, tier: account.tier, createdAt: account.createdAt };
}

export function presentKey(record: ApiKeyRecord, now: number) {
  return {
    id: record.id,
    name: record.name,
    hint: record.hint,
    createdAt: record.createdAt,
    lastUsedAt: record.lastUsedAt,
    expiresAt: record.expiresAt,
    revokedAt: record.revokedAt,
    status: keyStatus(record, now),
    ...presentDashboardPermissions(record, now),
  };
}

export const NO_MONEY: AccountBalance = { balanceNano: 0n, reservedNano: 0n, freeDay: 0, freeUsedTokens: 0, freeReservedTokens: 0 };

/** Today's free allowance. The counters belong to `freeDay`: on a new UTC day they are stale, i.e. zero. */
export function presentFreeAllowance(money: AccountBalance, limitTokens: number, now: number) {
  const today = money.freeDay === utcDayNumber(now);
  const usedTokens = today ? money.freeUsedTokens : 0;
  const reservedTokens = today ? money.freeReservedTokens : 0;
  return {
    limitTokens,
    usedTokens,
    leftTokens: Math.max(0, limitTokens - usedTokens - reservedTokens),
    resetsAt: nextAllowanceReset(now).getTime(),
  };
}

const KIND_DESCRIPTIONS: Record<LedgerEntry['kind'], string> = {
  topup: 'Top-up',
  usage: 'Usage',
  refund: 'Refund',
  adjustment: 'Adjustment',
  redemption: 'Redemption code',
};

export function presentLedgerEntry(entry: LedgerEntry) {
  const detail = entry.kind === 'usage' && entry.requestId !== null ? `request ${entry.requestId}` : entry.note;
  return {
    id: entry.id,
    kind: entry.kind,
    amountUsd: formatUsd(entry.amountNano),
    balanceAfterUsd: formatUsd(entry.balanceAfterNano),
    createdAt: entry.createdAt,
    description: detail === null || detail === '' ? KIND_DESCRIPTIONS[entry.kind] : `${KIND_DESCRIPTIONS[entry.kind]}: ${detail}`,
  };
}
