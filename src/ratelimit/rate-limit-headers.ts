import type { RateLimitDecision } from './rate-limiter.js';

/**
 * Rate-limit headers as each client protocol's SDKs expect them. Pure functions of a decision: no HTTP types,
 * the HTTP layer copies the returned map onto its reply.
 *
 * Reset means "until the window has room for one more" (the decision's `resetMs`), not "until it is fully
 * replenished": that is what a client pacing itself needs, and what `retry-after` promises.
 */

export type RateLimitKind = 'requests' | 'tokens';

/**
 * A duration the way OpenAI writes `x-ratelimit-reset-*` (Go's `time.Duration` format): `12ms`, `1s`, `1.5s`,
 * `6m0s`, `1h0m0s`. Fractional milliseconds are rounded up so a client never waits too little.
 */
export function formatResetDuration(ms: number): string {
  const total = Number.isFinite(ms) ? Math.max(0, Math.ceil(ms)) : 0;
  if (total === 0) return '0s';
  if (total < 1_000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const millis = total % 60_000;
  const wholeSeconds = Math.floor(millis / 1_000);
  const fraction = millis % 1_000;
  const seconds =
    fraction === 0 ? `${wholeSeconds}` : `${wholeSeconds}.${String(fraction).padStart(3, '0').replace(/0+$/, '')}`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/**
 * The instant `resetMs` from `nowMs`, as Anthropic's `anthropic-ratelimit-*-reset` (RFC 3339, UTC), rounded up
 * to the whole second (`2025-01-01T00:00:01Z`): a client that waits until then finds room.
 */
export function formatResetTimestamp(resetMs: number, nowMs: number = Date.now()): string {
  const at = Math.ceil((nowMs + Math.max(0, resetMs)) / 1_000) * 1_000;
  return new Date(at).toISOString().replace('.000Z', 'Z');
}

/** Header names per kind, built once rather than by template on every request. */
const OPENAI_NAMES: Record<RateLimitKind, readonly [string, string, string]> = {
  requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
  tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
};
const ANTHROPIC_NAMES: Record<RateLimitKind, readonly [string, string, string]> = {
  requests: [
    'anthropic-ratelimit-requests-limit',
    'anthropic-ratelimit-requests-remaining',
    'anthropic-ratelimit-requests-reset',
  ],
  tokens: [
    'anthropic-ratelimit-tokens-limit',
    'anthropic-ratelimit-tokens-remaining',
    'anthropic-ratelimit-tokens-reset',
  ],
};

/** Anything headers can be set on (a fastify reply, a plain map's writer); keeps HTTP types out of here. */
export interface HeaderTarget {
  header(name: string, value: string): unknown;
}

/** `x-ratelimit-{limit,remaining,reset}-<kind>`, plus `retry-after` (whole seconds) when refused. */
export function openAiRateLimitHeaders(
  decision: RateLimitDecision,
  kind: RateLimitKind = 'requests',
): Record<string, string> {
  const headers: Record<string, string> = {};
  setOpenAiRateLimitHeaders({ header: (name, value) => (headers[name] = value) }, decision, kind);
  return headers;
}

/** `anthropic-ratelimit-<kind>-{limit,remaining,reset}`, plus `retry-after` (whole seconds) when refused. */
export function anthropicRateLimitHeaders(
  decision: RateLimitDecision,
  kind: RateLimitKind = 'requests',
  nowMs: number = Date.now(),
): Record<string, string> {
  const headers: Record<string, string> = {};
  setAnthropicRateLimitHeaders({ header: (name, value) => (headers[name] = value) }, decision, kind, nowMs);
  return headers;
}

/** The headers of `openAiRateLimitHeaders`, set directly on `target` (no intermediate map per request). */
export function setOpenAiRateLimitHeaders(
  target: HeaderTarget,
  decision: RateLimitDecision,
  kind: RateLimitKind,
): void {
  const [limit, remaining, reset] = OPENAI_NAMES[kind];
  target.header(limit, String(decision.limit));
  target.header(remaining, String(decision.remaining));
  target.header(reset, formatResetDuration(decision.resetMs));
  if (!decision.allowed) target.header('retry-after', String(decision.retryAfterSeconds));
}

/** The headers of `anthropicRateLimitHeaders`, set directly on `target`. */
export function setAnthropicRateLimitHeaders(
  target: HeaderTarget,
  decision: RateLimitDecision,
  kind: RateLimitKind,
  nowMs: number = Date.now(),
): void {
  const [limit, remaining, reset] = ANTHROPIC_NAMES[kind];
  target.header(limit, String(decision.limit));
  target.header(remaining, String(decision.remaining));
  target.header(reset, formatResetTimestamp(decision.resetMs, nowMs));
  if (!decision.allowed) target.header('retry-after', String(decision.retryAfterSeconds));
}
