import type { FastifyInstance } from 'fastify';
import { nextAllowanceReset, utcDayNumber } from '../billing/free-allowance.js';
import { formatUsd } from '../billing/money.js';
import { resolveTier, type Tiers } from '../ratelimit/tiers.js';
import type { AccountBalance, BillingRepository } from '../storage/billing-types.js';

export interface AccountApiOptions {
  billing: BillingRepository;
  /** The free daily allowance (input + output tokens per UTC day). */
  freeTokensPerDay: number;
  now?: () => number;
}

const NO_MONEY: AccountBalance = { balanceNano: 0n, reservedNano: 0n, freeDay: 0, freeUsedTokens: 0, freeReservedTokens: 0 };

/**
 * `GET /v1/account`: who the key belongs to, its money, today's free allowance and the limits it runs under.
 * Amounts come twice: USD as an exact decimal string and nano-USD as an integer string (JSON numbers would
 * lose precision past 2^53).
 */
export function registerAccountApi(app: FastifyInstance, tiers: Tiers, options: AccountApiOptions): void {
  const now = options.now ?? Date.now;
  app.get('/v1/account', { config: { scope: 'usage:read' } }, async (request) => {
    const { account } = request.auth!;
    const tier = resolveTier(account.tier, tiers);
    const at = now();
    const money = (await options.billing.balance(account.id)) ?? NO_MONEY;
    const available = money.balanceNano - money.reservedNano;
    // The counters belong to `freeDay`: on the first request of a new UTC day they are stale, i.e. zero today.
    const today = money.freeDay === utcDayNumber(at);
    const usedToday = today ? money.freeUsedTokens : 0;
    const reservedToday = today ? money.freeReservedTokens : 0;
    return {
      object: 'account',
      id: account.id,
      email: account.email,
      tier: tier.name,
      balance: {
        usd: formatUsd(money.balanceNano),
        nano_usd: money.balanceNano.toString(),
        reserved_usd: formatUsd(money.reservedNano),
        reserved_nano_usd: money.reservedNano.toString(),
        available_usd: formatUsd(available),
        available_nano_usd: available.toString(),
      },
      free_allowance: {
        tokens_per_day: options.freeTokensPerDay,
        used_today: usedToday,
        reserved_today: reservedToday,
        left_today: Math.max(0, options.freeTokensPerDay - usedToday - reservedToday),
        resets_at: nextAllowanceReset(at).toISOString(),
      },
      rate_limits: { requests_per_minute: tier.requestsPerMinute, tokens_per_minute: tier.tokensPerMinute ?? null },
      tiers_available: Object.entries(tiers).map(([name, definition]) => ({
        name,
        requests_per_minute: definition.requestsPerMinute,
        tokens_per_minute: definition.tokensPerMinute ?? null,
      })),
    };
  });
}
