import type { FastifyInstance } from 'fastify';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';
import { NO_MONEY, presentFreeAllowance } from './presenters.js';

/**
 * `GET /api/standing`: whether the API refuses the session's organisation's requests right now, for the banner every dashboard
 * page shows. Cheap on purpose (one balance read): the dashboard asks on every page.
 *
 * `no_credit`: no free tokens left today and nothing available (balance less holds), so every model request gets
 * 403 `insufficient_balance` until a top-up or the allowance's reset. A disabled account has no session to ask with.
 */
export function registerStandingRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/standing', { config: { permission: 'organisation:read' } }, async (request) => {
    const organisation = currentOrganisation(request).organisation;
    const now = deps.now();
    const balance = (await deps.billing.balance(organisation.id)) ?? NO_MONEY;
    const free = presentFreeAllowance(balance, deps.freeTokensPerDay, now);
    const available = balance.balanceNano - balance.reservedNano;
    if (free.leftTokens > 0 || available > 0n) return { refusing: null };
    return {
      refusing: {
        reason: 'no_credit' as const,
        // Null when the operator gives no free tokens: only credit helps.
        freeTokensReturnAt: deps.freeTokensPerDay > 0 ? free.resetsAt : null,
      },
    };
  });
}
