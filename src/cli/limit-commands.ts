import { AuditLog } from '../accounts/audit/audit-log.js';
import { formatUsd } from '../billing/money.js';
import { SpendLimitService } from '../billing/spend-limit-service.js';
import { parseLimitUsd } from '../http/key-permission-fields.js';
import type { SpendLimitRecord } from '../storage/spend-limit-types.js';
import type { Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';
import { walletTarget } from './wallet-target.js';

/** `limits set | clear | list`: spend limits per period of an organisation, its projects and its keys. */
export const LIMIT_USAGE = `  limits set --email E|--organisation ID --scope organisation|project|key [--id ID] --period P --usd USD
                                                 P: day|week|month (a key also: total); --id names the project
                                                 or key (an organisation's own limit needs none)
  limits clear --email E|--organisation ID --scope S [--id ID] --period P
  limits list --email E|--organisation ID [--scope S] [--id ID]
`;

export interface LimitCommandValues {
  email?: string | undefined;
  organisation?: string | undefined;
  scope?: string | undefined;
  id?: string | undefined;
  period?: string | undefined;
  usd?: string | undefined;
}

export function isLimitCommand(command: string): boolean {
  return command === 'limits set' || command === 'limits clear' || command === 'limits list';
}

export async function runLimitCommand(
  command: string,
  storage: Storage,
  values: LimitCommandValues,
): Promise<{ data: unknown; text: string }> {
  const { organisationId, label } = await walletTarget(storage, values);
  const service = new SpendLimitService(storage.spendLimits, storage.apiKeys, storage.projects);
  if (command === 'limits list') {
    const limits = await service.list(organisationId, {
      ...(values.scope === undefined ? {} : { scope: values.scope }),
      ...(values.id === undefined ? {} : { scopeId: values.id }),
    });
    return { data: limits.map(present), text: limits.map(describe).join('\n') || `No spend limits on ${label}.` };
  }
  const scope = required(values.scope, 'scope');
  const target = {
    scope,
    scopeId: scope === 'organisation' ? (values.id ?? organisationId) : required(values.id, 'id'),
    period: required(values.period, 'period'),
  };
  const audit = new AuditLog(storage.audit, storage.organisations);
  const operator = { organisationId, actor: { type: 'operator' as const }, ip: null };
  if (command === 'limits set') {
    const { before, after } = await service.set(
      organisationId,
      target,
      parseLimitUsd(required(values.usd, 'usd'), 'usd'),
    );
    await audit.record({
      ...operator,
      action: 'limit.set',
      target: { type: after.scope, id: after.scopeId },
      before: before === null ? null : snapshot(before),
      after: snapshot(after),
    });
    return { data: present(after), text: describe(after) };
  }
  const cleared = await service.clear(organisationId, target);
  await audit.record({
    ...operator,
    action: 'limit.cleared',
    target: { type: cleared.scope, id: cleared.scopeId },
    before: snapshot(cleared),
  });
  return { data: { ...present(cleared), cleared: true }, text: `Cleared ${describe(cleared)}` };
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new UsageError(`--${name} is required.`);
  return value;
}

function snapshot(limit: SpendLimitRecord) {
  return { scope: limit.scope, scopeId: limit.scopeId, period: limit.period, usd: formatUsd(limit.limitNano) };
}

function present(limit: SpendLimitRecord) {
  return {
    scope: limit.scope,
    scope_id: limit.scopeId,
    period: limit.period,
    usd: formatUsd(limit.limitNano),
    used_usd: formatUsd(limit.usedNano),
    held_usd: formatUsd(limit.reservedNano),
    resets_at: limit.resetsAt === null ? null : new Date(limit.resetsAt).toISOString(),
  };
}

function describe(limit: SpendLimitRecord): string {
  const per = limit.period === 'total' ? 'in total' : `per ${limit.period}`;
  return `${limit.scope} ${limit.scopeId}: $${formatUsd(limit.limitNano)} ${per}, $${formatUsd(limit.usedNano)} spent, $${formatUsd(limit.reservedNano)} held`;
}
