import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatUsd } from '../../billing/money.js';
import { tierSnapshot } from '../../billing/tier-snapshot.js';
import type { TierStatus } from '../../billing/tier-upgrades.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';
import { byPerson } from './audit-actor.js';

const buyBody = z.object({ tier: z.string().min(1).max(40) }).strict();
const renewalBody = z.object({ renews: z.boolean() }).strict();

const READ = { config: { permission: 'organisation:read' } } as const;
/** Buying from the balance, or stopping a renewal, spends the organisation's money. */
const PAY = { config: { permission: 'billing:manage' } } as const;

/** The dashboard's shape of a tier status: money as exact decimal USD strings, times in epoch ms. */
export function presentTierStatus(status: TierStatus) {
  return {
    current: {
      name: status.current.name,
      requestsPerMinute: status.current.requestsPerMinute,
      tokensPerMinute: status.current.tokensPerMinute ?? null,
    },
    source: status.source,
    bought: status.bought,
    lapsedTier: status.lapsed,
    paidTotalUsd: formatUsd(status.paidTotalNano),
    availableUsd: formatUsd(status.availableNano < 0n ? 0n : status.availableNano),
    tiers: status.tiers.map((tier) => ({
      name: tier.name,
      requestsPerMinute: tier.requestsPerMinute,
      tokensPerMinute: tier.tokensPerMinute,
      reachedAtTotalPaidUsd: tier.reachedAtTotalPaidNano === null ? null : formatUsd(tier.reachedAtTotalPaidNano),
      priceUsd: tier.priceNano === null ? null : formatUsd(tier.priceNano),
      periodDays: tier.periodDays,
      position: tier.position,
    })),
  };
}

/**
 * `GET /api/tiers`, `POST /api/tiers/buy`, `POST /api/tiers/renewal`: the user's own tier, self-serve
 * (docs/architecture.md#rate-limits-and-tiers).
 */
export function registerTierRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/tiers', READ, async (request) =>
    presentTierStatus(await deps.tierUpgrades.status(currentOrganisation(request).organisation.id)),
  );

  api.post('/tiers/buy', PAY, async (request) => {
    const { tier } = parseInput(buyBody, request.body);
    const accountId = currentOrganisation(request).organisation.id;
    const before = await deps.tierUpgrades.status(accountId);
    const after = await deps.tierUpgrades.buy(accountId, tier);
    await deps.audit.record({
      organisationId: accountId,
      ...byPerson(request),
      action: 'tier.purchase',
      target: { type: 'tier', id: tier },
      before: tierSnapshot(before),
      after: tierSnapshot(after),
    });
    return presentTierStatus(after);
  });

  api.post('/tiers/renewal', PAY, async (request) => {
    const { renews } = parseInput(renewalBody, request.body);
    const accountId = currentOrganisation(request).organisation.id;
    const before = await deps.tierUpgrades.status(accountId);
    const after = await deps.tierUpgrades.setRenewal(accountId, renews);
    await deps.audit.record({
      organisationId: accountId,
      ...byPerson(request),
      action: 'tier.renewal',
      target: after.bought === null ? null : { type: 'tier', id: after.bought.tier },
      before: tierSnapshot(before),
      after: tierSnapshot(after),
    });
    return presentTierStatus(after);
  });
}
