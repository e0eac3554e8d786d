import type { FastifyInstance } from 'fastify';
import { formatUsd } from '../../billing/money.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';
import { NO_MONEY, presentFreeAllowance } from './presenters.js';

/**
 * `GET /api/standing`: what stands between the session's organisation and its API requests right now, for the banners every
 * dashboard page shows. Cheap on purpose (a balance read and one organisation row): the dashboard asks on every page.
 *
 * `refusing.no_credit`: no free tokens left today and nothing available (balance less holds), so every model request
 * gets 403 `insufficient_balance` until a top-up or the allowance's reset. `tierLapsed`: a bought tier whose renewal
 * the balance could not pay, so requests run at a lower tier's limits. A disabled account has no session to ask with
 * (the log-in answer says so instead).
 */
export function registerStandingRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/standing', { config: { permission: 'organisation:read' } }, async (request) => {
    const organisation = currentOrganisation(request).organisation;
    const now = deps.now();
    const [money, tier] = await Promise.all([
      deps.billing.balance(organisation.id),
      deps.tierUpgrades.lapsed(organisation.id),
    ]);
    const balance = money ?? NO_MONEY;
    const free = presentFreeAllowance(balance, deps.freeTokensPerDay, now);
    const available = balance.balanceNano - balance.reservedNano;
    return {
      refusing:
        free.leftTokens > 0 || available > 0n
          ? null
          : {
              reason: 'no_credit' as const,
              // Null when the operator gives no free tokens: only credit helps.
              freeTokensReturnAt: deps.freeTokensPerDay > 0 ? free.resetsAt : null,
            },
      tierLapsed: tier === null ? null : lapsedTier(deps, tier.lapsed, tier.tier, available),
    };
  });
}

/** The lapsed tier with its price and the tier in force now, and whether the balance would pay for it again. */
function lapsedTier(deps: DashboardDependencies, lapsed: string | null, current: string, available: bigint) {
  if (lapsed === null) return null;
  const price = deps.tiers[lapsed]?.upgrade?.priceNano;
  // No longer for sale (the operator changed the tiers): nothing to offer.
  if (price === undefined) return null;
  return {
    tier: lapsed,
    currentTier: current,
    priceUsd: formatUsd(price),
    affordable: available >= price,
  };
}
