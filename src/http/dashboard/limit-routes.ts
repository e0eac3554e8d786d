import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatUsd } from '../../billing/money.js';
import type { SpendLimitRecord } from '../../storage/spend-limit-types.js';
import { parseLimitUsd } from '../key-permission-fields.js';
import { byPerson } from './audit-actor.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';

const setLimitBody = z.object({ usd: z.union([z.string(), z.number()]) }).strict();

type LimitParams = { Params: { scope: string; scopeId: string; period: string } };

/**
 * The spend limits of the session's organisation, its projects and its keys (docs/billing.md#spend-limits): members
 * who read money (`billing:read`) list them with what each has spent and holds; owners and admins (`limits:manage`)
 * set and clear them. Each change goes to the audit log with the limit before and after.
 */
export function registerLimitRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get<{ Querystring: { scope?: string; scopeId?: string } }>(
    '/limits',
    { config: { permission: 'billing:read' } },
    async (request) => {
      const organisationId = currentOrganisation(request).organisation.id;
      const { scope, scopeId } = request.query;
      const limits = await deps.spendLimits.list(organisationId, {
        ...(scope === undefined ? {} : { scope }),
        ...(scopeId === undefined ? {} : { scopeId }),
      });
      return { limits: limits.map(presentLimit) };
    },
  );

  api.put<LimitParams>(
    '/limits/:scope/:scopeId/:period',
    { config: { permission: 'limits:manage' } },
    async (request) => {
      const body = parseInput(setLimitBody, request.body);
      const limitNano = parseLimitUsd(body.usd, 'usd');
      const organisationId = currentOrganisation(request).organisation.id;
      const { before, after } = await deps.spendLimits.set(organisationId, request.params, limitNano);
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'limit.set',
        target: { type: after.scope, id: after.scopeId },
        ...(before === null ? {} : { before: limitSnapshot(before) }),
        after: limitSnapshot(after),
      });
      return { limit: presentLimit(after) };
    },
  );

  api.delete<LimitParams>(
    '/limits/:scope/:scopeId/:period',
    { config: { permission: 'limits:manage' } },
    async (request) => {
      const organisationId = currentOrganisation(request).organisation.id;
      const cleared = await deps.spendLimits.clear(organisationId, request.params);
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'limit.cleared',
        target: { type: cleared.scope, id: cleared.scopeId },
        before: limitSnapshot(cleared),
      });
      return { cleared: presentLimit(cleared) };
    },
  );
}

/** What the audit log keeps of a limit: which one, and its amount. */
function limitSnapshot(limit: SpendLimitRecord) {
  return { scope: limit.scope, scopeId: limit.scopeId, period: limit.period, usd: formatUsd(limit.limitNano) };
}

/** A limit for the dashboard (money as exact USD strings, times in epoch ms). */
export function presentLimit(limit: SpendLimitRecord) {
  const left = limit.limitNano - limit.usedNano - limit.reservedNano;
  return {
    id: limit.id,
    scope: limit.scope,
    scopeId: limit.scopeId,
    period: limit.period,
    usd: formatUsd(limit.limitNano),
    usedUsd: formatUsd(limit.usedNano),
    heldUsd: formatUsd(limit.reservedNano),
    remainingUsd: formatUsd(left > 0n ? left : 0n),
    resetsAt: limit.resetsAt,
    updatedAt: limit.updatedAt,
  };
}
