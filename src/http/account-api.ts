import type { FastifyInstance } from 'fastify';
import { nextAllowanceReset, utcDayNumber } from '../billing/free-allowance.js';
import { formatUsd } from '../billing/money.js';
import type { TierUpgrades } from '../billing/tier-upgrades.js';
import { resolveTier, type Tiers } from '../ratelimit/tiers.js';
import type { AccountBalance, BillingRepository } from '../storage/billing-types.js';

export interface AccountApiOptions {
  billing: BillingRepository;
  /** The free daily allowance (input + output tokens per UTC day). */
  freeTokensPerDay: number;
  now?: () => number;
  /** Self-serve upgrades: how each tier is reached, and a tier bought from the balance. */
  tierUpgrades?: TierUpgrades | undefined;
}

const NO_MONEY: AccountBalance = {
  balanceNano: 0n,
  reservedNano: 0n,
  freeDay: 0,
  freeUsedTokens: 0,
  freeReservedTokens: 0,
};

/**
 * `GET /v1/account`: the organisation the key belongs to (who pays), its money, today's free allowance and the limits it runs under.
 * Amounts come twice: USD as an exact decimal string and nano-USD as an integer string (JSON numbers would
 * lose precision past 2^53).
 */
export function registerAccountApi(app: FastifyInstance, tiers: Tiers, options: AccountApiOptions): void {
  const now = options.now ?? Date.now;
  app.get('/v1/account', { config: { scope: 'usage:read' } }, async (request) => {
    const { organisation } = request.auth!;
    const tier = resolveTier(organisation.tier, tiers);
    const at = now();
    const [balance, holds, upgrades] = await Promise.all([
      options.billing.balance(organisation.id),
      options.billing.holds(organisation.id, utcDayNumber(at), options.freeTokensPerDay),
      options.tierUpgrades?.status(organisation.id),
    ]);
    const money = balance ?? NO_MONEY;
    const available = money.balanceNano - money.reservedNano;
    // The counters belong to `freeDay`: on the first request of a new UTC day they are stale, i.e. zero today.
    const today = money.freeDay === utcDayNumber(at);
    const usedToday = today ? money.freeUsedTokens : 0;
    const reservedToday = today ? money.freeReservedTokens : 0;
    return {
      object: 'account',
      // The organisation's: a personal organisation's id is its person's account id, as before organisations.
      id: organisation.id,
      name: organisation.name,
      tier: tier.name,
      balance: {
        usd: formatUsd(money.balanceNano),
        nano_usd: money.balanceNano.toString(),
        reserved_usd: formatUsd(money.reservedNano),
        reserved_nano_usd: money.reservedNano.toString(),
        available_usd: formatUsd(available),
        available_nano_usd: available.toString(),
        // What `reserved` is (docs/architecture.md#holds-that-grow): the holds of this many requests in flight, each
        // its prompt and the slices of output granted so far; released or settled as each finishes.
        requests_in_flight: holds?.holds ?? 0,
      },
      free_allowance: {
        tokens_per_day: options.freeTokensPerDay,
        used_today: usedToday,
        reserved_today: reservedToday,
        left_today: Math.max(0, options.freeTokensPerDay - usedToday - reservedToday),
        resets_at: nextAllowanceReset(at).toISOString(),
      },
      rate_limits: { requests_per_minute: tier.requestsPerMinute, tokens_per_minute: tier.tokensPerMinute ?? null },
      // The same figures as the dashboard's Overview: how each tier is reached (total paid, or a price per period).
      tier_source: upgrades?.source ?? 'granted',
      tier_bought:
        upgrades?.bought == null
          ? null
          : {
              tier: upgrades.bought.tier,
              until: new Date(upgrades.bought.until).toISOString(),
              renews: upgrades.bought.renews,
            },
      total_paid_usd: upgrades === undefined ? null : formatUsd(upgrades.paidTotalNano),
      tiers_available: Object.entries(tiers).map(([name, definition]) => ({
        name,
        requests_per_minute: definition.requestsPerMinute,
        tokens_per_minute: definition.tokensPerMinute ?? null,
        reached_at_total_paid_usd:
          definition.upgrade?.atTotalPaidNano === undefined ? null : formatUsd(definition.upgrade.atTotalPaidNano),
        price_usd: definition.upgrade?.priceNano === undefined ? null : formatUsd(definition.upgrade.priceNano),
        period_days: definition.upgrade?.priceNano === undefined ? null : definition.upgrade.periodDays,
      })),
    };
  });
}
