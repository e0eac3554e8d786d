import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { anthropicRateLimitHeaders, openAiRateLimitHeaders, type RateLimitKind } from '../ratelimit/rate-limit-headers.js';
import { RateLimiterUnavailableError, type RateLimitDecision, type RateLimiter } from '../ratelimit/rate-limiter.js';
import { resolveTier, type Tiers } from '../ratelimit/tiers.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';

/**
 * Hook for the model endpoints (routes with `config.rateLimited`): counts the request against its key's
 * rolling one-minute window at the account's tier, and answers with the limit headers both SDK families read.
 * A refused request is not counted, so a client that waits out `retry-after` gets in.
 */
export function createRateLimitHook(limiter: RateLimiter, tiers: Tiers, metrics: GatewayMetrics = NO_METRICS) {
  return async function enforceRateLimit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const config = request.routeOptions.config;
    if (config.rateLimited !== true || request.auth === null) return;
    const tier = resolveTier(request.auth.account.tier, tiers);
    const subject = rateLimitSubject(request.auth.key.id);
    const decision = await guarded(() => limiter.check(subject, tier.requestsPerMinute));
    announce(reply, decision, 'requests', config.protocol === 'anthropic');
    if (!decision.allowed) {
      metrics.rateLimitRefused('requests');
      throw refusal('requests', tier.requestsPerMinute, tier.name, decision.retryAfterSeconds);
    }
    // Tokens per minute (optional per tier) are post-paid: refused while the last minute's usage is at the limit.
    if (tier.tokensPerMinute !== undefined) {
      const tokens = await guarded(() => limiter.checkTokens(subject, tier.tokensPerMinute!));
      announce(reply, tokens, 'tokens', config.protocol === 'anthropic');
      if (!tokens.allowed) {
        metrics.rateLimitRefused('tokens');
        throw refusal('tokens', tier.tokensPerMinute, tier.name, tokens.retryAfterSeconds);
      }
    }
  };
}

/** The limiter's key for an API key's budgets (requests and tokens). */
export function rateLimitSubject(apiKeyId: string): string {
  return `key:${apiKeyId}`;
}

function announce(reply: FastifyReply, decision: RateLimitDecision, kind: RateLimitKind, anthropic: boolean): void {
  reply.headers(openAiRateLimitHeaders(decision, kind));
  if (anthropic) reply.headers(anthropicRateLimitHeaders(decision, kind));
}

function refusal(kind: RateLimitKind, limit: number, tierName: string, retryAfterSeconds: number): GatewayError {
  return new GatewayError(
    'rate_limit_exceeded',
    `Rate limit reached for ${kind}: ${limit} per minute on the '${tierName}' tier. Try again in ${retryAfterSeconds} s, or upgrade the tier in the dashboard.`,
    { retryAfterSeconds },
  );
}

async function guarded(check: () => Promise<RateLimitDecision>): Promise<RateLimitDecision> {
  try {
    return await check();
  } catch (error) {
    if (error instanceof RateLimiterUnavailableError) {
      throw new GatewayError('rate_limiter_unavailable', 'Rate limits cannot be checked right now. Please retry shortly.', {
        retryAfterSeconds: error.retryAfterSeconds,
        cause: error,
      });
    }
    throw error;
  }
}
