import type { FastifyInstance } from 'fastify';
import { resolveTier, type Tiers } from '../ratelimit/tiers.js';

/** `GET /v1/account`: who the key belongs to and the limits it runs under. */
export function registerAccountApi(app: FastifyInstance, tiers: Tiers): void {
  app.get('/v1/account', async (request) => {
    const { account } = request.auth!;
    const tier = resolveTier(account.tier, tiers);
    return {
      object: 'account',
      id: account.id,
      email: account.email,
      tier: tier.name,
      rate_limits: { requests_per_minute: tier.requestsPerMinute, tokens_per_minute: tier.tokensPerMinute ?? null },
      tiers_available: Object.entries(tiers).map(([name, definition]) => ({
        name,
        requests_per_minute: definition.requestsPerMinute,
        tokens_per_minute: definition.tokensPerMinute ?? null,
      })),
    };
  });
}
