import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { anthropicRateLimitHeaders, openAiRateLimitHeaders } from '../ratelimit/rate-limit-headers.js';
import { RateLimiterUnavailableError, type RateLimiter } from '../ratelimit/rate-limiter.js';
import { resolveTier, type Tiers } from '../ratelimit/tiers.js';

/**
 * Hook for the model endpoints (routes with `config.rateLimited`): counts the request against its key's
 * rolling one-minute window at the account's tier, and answers with the limit headers both SDK families read.
 * A refused request is not counted, so a client that waits out `retry-after` gets in.
 */
export function createRateLimitHook(limiter: RateLimiter, tiers: Tiers) {
  return async function enforceRateLimit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const config = request.routeOptions.config;
    if (config.rateLimited !== true || request.auth === null) return;
    const tier = resolveTier(request.auth.account.tier, tiers);
    let decision;
    try {
      decision = await limiter.check(`key:${request.auth.key.id}`, tier.requestsPerMinute);
    } catch (error) {
      if (error instanceof RateLimiterUnavailableError) {
        throw new GatewayError('rate_limiter_unavailable', 'Rate limits cannot be checked right now. Please retry shortly.', {
          retryAfterSeconds: error.retryAfterSeconds,
          cause: error,
        });
      }
      throw error;
    }
    reply.headers(openAiRateLimitHeaders(decision));
    if (config.protocol === 'anthropic') reply.headers(anthropicRateLimitHeaders(decision));
    if (!decision.allowed) {
      throw new GatewayError(
        'rate_limit_exceeded',
        `Rate limit reached for requests: ${tier.requestsPerMinute} per minute on the '${tier.name}' tier. Try again in ${decision.retryAfterSeconds} s, or upgrade the tier in the dashboard.`,
        { retryAfterSeconds: decision.retryAfterSeconds },
      );
    }
  };
}
