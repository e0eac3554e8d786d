/**
 * The rate limiter contract (docs/architecture.md#rate-limits-and-tiers): per-subject strict rolling windows, with an
 * in-process and a Redis implementation behind this one interface. No HTTP types here; `rate-limit-headers.ts` turns a
 * decision into response headers.
 */

/** Every limit in the issue is "per minute"; callers pass another window only in tests or for special tiers. */
export const DEFAULT_WINDOW_MS = 60_000;

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  /** Requests (or tokens) still admissible in the current window, after this decision. */
  remaining: number;
  /** ms until the window has room for one more (0 when allowed and remaining > 0). */
  resetMs: number;
  /**
   * When refused: whole seconds to wait, rounded up, so that a retry after exactly this long is admitted
   * (it is when the oldest admission that blocks us leaves the window). 0 when allowed.
   */
  retryAfterSeconds: number;
}

/**
 * Requests: `check` admits or refuses one request and, when admitted, records it; refused requests are not
 * recorded, so a client hammering a full window does not push its own recovery further out.
 *
 * Tokens (optional tokens-per-minute, off unless a tier sets it): token counts are only known after the
 * response, so TPM is enforced "post-paid": `checkTokens` before the request refuses while the tokens recorded
 * in the last window are at or above the limit, and `recordTokens` after the response adds what was used. A
 * single request may therefore overshoot the limit once; the next ones wait until the window drains. It is a
 * separate pair of methods so a caller that never enables TPM pays nothing for it.
 */
export interface RateLimiter {
  check(subject: string, limit: number, windowMs?: number): Promise<RateLimitDecision>;
  checkTokens(subject: string, limit: number, windowMs?: number): Promise<RateLimitDecision>;
  /** Never throws for backend failures: it runs after the response and must not fail a served request. */
  recordTokens(subject: string, tokens: number, windowMs?: number): Promise<void>;
  /** Stops timers and connections; the limiter must not be used afterwards. */
  close(): Promise<void>;
  /** Readiness probe: rejects when a shared backend (Redis) cannot answer. Absent for in-process limiters. */
  ping?(): Promise<void>;
}

/**
 * Thrown by a fail-closed limiter whose backend is unreachable. The HTTP layer should answer 503 (the gateway
 * cannot decide), not 429: the client did nothing wrong and a 429 would mislead its back-off.
 */
export class RateLimiterUnavailableError extends Error {
  /** A short pause to suggest in `retry-after`; the backend timeout policy makes longer outages visible anyway. */
  readonly retryAfterSeconds = 1;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RateLimiterUnavailableError';
  }
}

/** Rejects arguments that would make a window meaningless; both backends share the same rules. */
export function assertLimitArguments(limit: number, windowMs: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new RangeError(`Rate limit must be a positive integer, got ${limit}.`);
  if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new RangeError(`Rate limit window must be a positive integer of milliseconds, got ${windowMs}.`);
  }
}

export function assertTokenCount(tokens: number): void {
  if (!Number.isSafeInteger(tokens) || tokens < 0)
    throw new RangeError(`Token count must be a non-negative integer, got ${tokens}.`);
}

/** A decision from "how many are in the window now" and "how long until one more fits". */
export function decision(allowed: boolean, limit: number, used: number, resetMs: number): RateLimitDecision {
  const remaining = Math.max(0, limit - used);
  const wait = Math.max(0, Math.ceil(resetMs));
  return {
    allowed,
    limit,
    remaining,
    resetMs: allowed && remaining > 0 ? 0 : wait,
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(wait / 1000)),
  };
}
