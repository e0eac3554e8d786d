import { permissionsOf } from '../../accounts/organisation-roles.js';
import type { Membership } from '../../storage/organisation-types.js';
import { nextAllowanceReset, utcDayNumber } from '../../billing/free-allowance.js';
import { formatUsd } from '../../billing/money.js';
import type { AccountBalance, LedgerEntry } from '../../storage/billing-types.js';
import type { AccountRecord, ApiKeyRecord } from '../../storage/types.js';
import { currentPeriodSpend } from '../../keys/key-permissions.js';
import { isPlaygroundKeyId } from '../../keys/playground-key.js';
import { presentDashboardPermissions } from '../key-permission-fields.js';
import { keyStatus } from '../keys-api.js';

/** The dashboard's JSON shapes (docs/dashboard-api.md): camelCase, times in epoch ms, money as exact USD strings. */

/** An organisation as a member sees it in the switcher, with what their role there allows (the web app's controls). */
export function presentMembership(membership: Membership) {
  return {
    id: membership.organisation.id,
    name: membership.organisation.name,
    role: membership.role,
    permissions: permissionsOf(membership.role),
    joinedAt: membership.joinedAt,
  };
}

export function presentAccount(account: AccountRecord) {
  return { id: account.id, email: account.email, role: account.role, tier: account.tier, createdAt: account.createdAt };
}

/**
 * A key as the keys list shows it. `smallestHoldNano`: the least any request the key may make holds at admission
 * (`smallestAdmissionHold` over its models): with less than that left of its spend limit, `limitReached` is true.
 */
export function presentKey(record: ApiKeyRecord, now: number, smallestHoldNano = 1n) {
  const permissions = presentDashboardPermissions(record, now);
  const limit = record.permissions.spendLimit;
  const left =
    limit === null ? null : limit.limitNano - currentPeriodSpend(limit, record.spend, now) - record.spend.reservedNano;
  return {
    id: record.id,
    name: record.name,
    hint: record.hint,
    // The playground's own key (no secret, not revocable): shown as such.
    kind: isPlaygroundKeyId(record.id) ? ('playground' as const) : ('standard' as const),
    projectId: record.projectId,
    createdAt: record.createdAt,
    lastUsedAt: record.lastUsedAt,
    expiresAt: record.expiresAt,
    revokedAt: record.revokedAt,
    status: keyStatus(record, now),
    ...permissions,
    spendLimit:
      permissions.spendLimit === null || left === null
        ? null
        : { ...permissions.spendLimit, limitReached: left < smallestHoldNano },
  };
}

export const NO_MONEY: AccountBalance = {
  balanceNano: 0n,
  reservedNano: 0n,
  freeDay: 0,
  freeUsedTokens: 0,
  freeReservedTokens: 0,
};

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
  tier: 'Tier',
};

/** What a usage entry paid for, from its usage record (absent once retention deleted the record). */
export interface LedgerUsageDetail {
  requestId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** Cache reads and writes together. */
  cachedTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of the cache writes written for an hour (priced above 5-minute writes). */
  cacheWrite1hTokens: number;
  keyName: string | null;
}

export function presentLedgerEntry(entry: LedgerEntry, usage?: LedgerUsageDetail) {
  let description: string;
  if (usage !== undefined) {
    const oneHour =
      usage.cacheWrite1hTokens > 0 ? ` (${usage.cacheWrite1hTokens.toLocaleString('en-US')} written for 1h)` : '';
    const cached = usage.cachedTokens > 0 ? `, ${usage.cachedTokens.toLocaleString('en-US')} cached${oneHour}` : '';
    const key = usage.keyName === null ? '' : ` · key ${usage.keyName}`;
    const unbilled =
      entry.unbilledTokens > 0
        ? `, ${entry.unbilledTokens.toLocaleString('en-US')} unbilled ($${formatUsd(entry.unbilledNano)})`
        : '';
    const searches =
      entry.webSearchRequests > 0
        ? `, ${entry.webSearchRequests} web search${entry.webSearchRequests === 1 ? '' : 'es'} ($${formatUsd(entry.serverToolNano)})`
        : '';
    description = `${usage.model} · ${usage.inputTokens.toLocaleString('en-US')} in / ${usage.outputTokens.toLocaleString('en-US')} out${cached}${searches}${unbilled}${key}`;
  } else {
    // Older usage entries carry the model as their note; the request id links them to the request either way.
    const detail = entry.note;
    description =
      detail === null || detail === '' ? KIND_DESCRIPTIONS[entry.kind] : `${KIND_DESCRIPTIONS[entry.kind]}: ${detail}`;
  }
  return {
    id: entry.id,
    kind: entry.kind,
    amountUsd: formatUsd(entry.amountNano),
    balanceAfterUsd: formatUsd(entry.balanceAfterNano),
    // Reported tokens the settlement could not charge, and their cost at list price (usage lines).
    unbilledTokens: entry.unbilledTokens,
    unbilledUsd: formatUsd(entry.unbilledNano),
    // Vendor-run tools of a usage line and their cost, a part of `amountUsd`.
    webSearchRequests: entry.webSearchRequests,
    webFetchRequests: entry.webFetchRequests,
    serverToolUsd: formatUsd(entry.serverToolNano),
    createdAt: entry.createdAt,
    description,
    requestId: entry.requestId,
    usage: usage ?? null,
  };
}
