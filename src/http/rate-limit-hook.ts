import type { FastifyReply } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import {
  setAnthropicRateLimitHeaders,
  setOpenAiRateLimitHeaders,
  type RateLimitKind,
} from '../ratelimit/rate-limit-headers.js';
import { RateLimiterUnavailableError, type RateLimitDecision, type RateLimiter } from '../ratelimit/rate-limiter.js';
import { resolveTier, type ResolvedTier, type Tiers } from '../ratelimit/tiers.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';

/** Enforces an authenticated key's limits on one request of a rate-limited route (see `createRateLimitEnforcer`). */
export type RateLimitEnforcer = (auth: AuthenticatedKey, reply: FastifyReply, anthropic: boolean) => Promise<void>;

/** Tier names resolved per limiter; a bound, since tier names come from account rows. */
const MAX_CACHED_TIERS = 64;

/**
 * For the model endpoints (routes with `config.rateLimited`): counts the request against its key's rolling
 * one-minute window at the account's tier, and answers with the limit headers both SDK families read.
 * A refused request is not counted, so a client that waits out `retry-after` gets in.
 */
export function createRateLimitEnforcer(
  limiter: RateLimiter,
  tiers: Tiers,
  metrics: GatewayMetrics = NO_METRICS,
): RateLimitEnforcer {
  // `tiers` is frozen config: a name resolves the same way every time, so resolve it once, not per request.
  const resolved = new Map<string | null, ResolvedTier>();
  const tierOf = (name: string | null): ResolvedTier => {
    let tier = resolved.get(name);
    if (tier === undefined) {
      tier = resolveTier(name, tiers);
      if (resolved.size < MAX_CACHED_TIERS) resolved.set(name, tier);
    }
    return tier;
  };
  /** One limit: its headers on the reply, and the refusal when it is spent (not counted then). */
  async function enforce(
    kind: RateLimitKind,
    limit: number,
    tierName: string | null,
    pending: Promise<RateLimitDecision>,
    reply: FastifyReply,
    anthropic: boolean,
  ): Promise<void> {
    let decision: RateLimitDecision;
    try {
      decision = await pending;
    } catch (error) {
      throw unavailable(error);
    }
    announce(reply, decision, kind, anthropic);
    if (!decision.allowed) {
      metrics.rateLimitRefused(kind);
      throw refusal(kind, limit, tierName, decision.retryAfterSeconds);
    }
  }
  return async function enforceRateLimit(
    auth: AuthenticatedKey,
    reply: FastifyReply,
    anthropic: boolean,
  ): Promise<void> {
    const tier = tierOf(auth.organisation.tier ?? null);
    const subject = rateLimitSubject(auth.key.id);
    // A key's own limits (docs/architecture.md#key-scopes-and-limits) sit below its tier's: the same window, with the
    // lower limit.
    const own = auth.key.permissions.rateLimit;
    const requests = lowerLimit(tier.requestsPerMinute, tier.name, own?.requestsPerMinute ?? null);
    await enforce(
      'requests',
      requests.limit,
      requests.tierName,
      limiter.check(subject, requests.limit),
      reply,
      anthropic,
    );
    // Tokens per minute (optional per tier and per key) are post-paid: refused while the last minute's usage is at the limit.
    const tokens = lowerLimit(tier.tokensPerMinute ?? null, tier.name, own?.tokensPerMinute ?? null);
    if (tokens.limit !== null) {
      await enforce(
        'tokens',
        tokens.limit,
        tokens.tierName,
        limiter.checkTokens(subject, tokens.limit),
        reply,
        anthropic,
      );
    }
  };
}

/** The lower of a tier's limit and a key's own; the tier's name when the tier's is the one that binds, else null. */
function lowerLimit<Limit extends number | null>(
  tierLimit: Limit,
  tierName: string,
  keyLimit: number | null,
): { limit: Limit | number; tierName: string | null } {
  if (keyLimit !== null && (tierLimit === null || keyLimit < tierLimit)) return { limit: keyLimit, tierName: null };
  return { limit: tierLimit, tierName };
}

/** Whether a key's tokens per minute are limited (by its tier or itself), so its usage must be recorded. */
export function tokensLimited(auth: AuthenticatedKey, tiers: Tiers): boolean {
  return (
    resolveTier(auth.organisation.tier ?? null, tiers).tokensPerMinute !== undefined ||
    (auth.key.permissions.rateLimit?.tokensPerMinute ?? null) !== null
  );
}

/** The limiter's key for an API key's budgets (requests and tokens). */
export function rateLimitSubject(apiKeyId: string): string {
  return `key:${apiKeyId}`;
}

function announce(reply: FastifyReply, decision: RateLimitDecision, kind: RateLimitKind, anthropic: boolean): void {
  setOpenAiRateLimitHeaders(reply, decision, kind);
  if (anthropic) setAnthropicRateLimitHeaders(reply, decision, kind);
}

function refusal(kind: RateLimitKind, limit: number, tierName: string | null, retryAfterSeconds: number): GatewayError {
  if (tierName === null) {
    return new GatewayError(
      'rate_limit_exceeded',
      `Rate limit reached for ${kind}: ${limit} per minute, this API key's own limit. Try again in ${retryAfterSeconds} s, or raise the key's limit in the dashboard.`,
      { retryAfterSeconds },
    );
  }
  return new GatewayError(
    'rate_limit_exceeded',
    `Rate limit reached for ${kind}: ${limit} per minute on the '${tierName}' tier. Try again in ${retryAfterSeconds} s, or upgrade the tier in the dashboard.`,
    { retryAfterSeconds },
  );
}

/** A limiter failure as thrown to the client: an unreachable backend is the 503 `rate_limiter_unavailable`. */
function unavailable(error: unknown): unknown {
  if (error instanceof RateLimiterUnavailableError) {
    return new GatewayError(
      'rate_limiter_unavailable',
      'Rate limits cannot be checked right now. Please retry shortly.',
      {
        retryAfterSeconds: error.retryAfterSeconds,
        cause: error,
      },
    );
  }
  return error;
}
