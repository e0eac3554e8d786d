import { AdmissionLog } from './admission-log.js';
import { ExpiringMap } from './expiring-map.js';
import {
  assertLimitArguments,
  assertTokenCount,
  decision,
  DEFAULT_WINDOW_MS,
  type RateLimitDecision,
  type RateLimiter,
} from './rate-limiter.js';
import { TokenLog } from './token-log.js';

export interface MemoryRateLimiterOptions {
  /** Injected clock, ms since the epoch (tests drive simulated minutes with it). */
  now?: () => number;
  /**
   * How often a background sweep drops idle subjects, in real ms (0 disables it). Checks already evict a few
   * idle subjects each; the sweep covers a gateway whose traffic stopped, so the memory is handed back anyway.
   */
  sweepIntervalMs?: number;
}

interface RequestEntry {
  log: AdmissionLog;
  idleAt: number;
}

interface TokenEntry {
  log: TokenLog;
  idleAt: number;
}

/**
 * Eviction records looked at per call: more than one, so eviction outpaces the at most one subject a call adds
 * and a backlog left by a burst drains; small, so no single request pays for a large sweep.
 */
const EVICTIONS_PER_CALL = 4;

/**
 * The in-process limiter (the embedded default, docs/architecture.md#runtime-shapes): exact per process, nothing shared
 * across instances.
 *
 * Every decision is made synchronously inside `check`, so N concurrent calls in one process are decided one
 * after the other with no interleaving (150 at once → exactly `limit` admitted). Memory is bounded: a subject
 * whose last admission has left the window holds nothing that counts and is evicted (see `expiring-map.ts`),
 * by the calls themselves (a few each) and by an unref'd periodic sweep.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly now: () => number;
  private readonly requests = new ExpiringMap<RequestEntry>();
  private readonly tokens = new ExpiringMap<TokenEntry>();
  private readonly sweepTimer: NodeJS.Timeout | undefined;

  constructor(options: MemoryRateLimiterOptions = {}) {
    this.now = options.now ?? Date.now;
    const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_WINDOW_MS;
    if (sweepIntervalMs > 0) {
      this.sweepTimer = setInterval(() => this.sweep(), sweepIntervalMs);
      // A limiter must never keep the process alive on its own.
      this.sweepTimer.unref();
    }
  }

  /** Subjects currently held (requests and token logs); for tests and metrics. */
  get trackedSubjects(): number {
    return this.requests.size + this.tokens.size;
  }

  check(subject: string, limit: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<RateLimitDecision> {
    return Promise.resolve(this.checkNow(subject, limit, windowMs));
  }

  /** The synchronous core of `check`: nothing in here may await, or concurrent calls could overshoot. */
  checkNow(subject: string, limit: number, windowMs: number = DEFAULT_WINDOW_MS): RateLimitDecision {
    assertLimitArguments(limit, windowMs);
    const now = this.now();
    this.requests.evictIdle(now, EVICTIONS_PER_CALL);
    const entry = this.requests.get(subject) ?? { log: new AdmissionLog(limit), idleAt: now };
    const log = entry.log;
    log.expire(now - windowMs);
    if (log.count < limit) {
      const recorded = log.push(now, limit);
      entry.idleAt = recorded + windowMs;
      this.requests.set(subject, entry);
      const used = log.count;
      // Full after this admission: room again when the admission `limit` places back leaves the window.
      const resetMs = used >= limit ? log.at(used - limit) + windowMs - now : 0;
      return decision(true, limit, used, resetMs);
    }
    // Refused, and not recorded. With a lowered limit more than `limit` may be held: room returns once all
    // but limit − 1 of them have left, i.e. when the one at index count − limit does.
    return decision(false, limit, log.count, log.at(log.count - limit) + windowMs - now);
  }

  checkTokens(subject: string, limit: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<RateLimitDecision> {
    assertLimitArguments(limit, windowMs);
    const now = this.now();
    this.tokens.evictIdle(now, EVICTIONS_PER_CALL);
    const entry = this.tokens.get(subject);
    if (entry === undefined) return Promise.resolve(decision(true, limit, 0, 0));
    const { used, resetMs } = entry.log.usage(now, limit, windowMs);
    return Promise.resolve(decision(used < limit, limit, used, resetMs));
  }

  recordTokens(subject: string, tokens: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<void> {
    assertTokenCount(tokens);
    assertLimitArguments(1, windowMs);
    if (tokens === 0) return Promise.resolve();
    const now = this.now();
    this.tokens.evictIdle(now, EVICTIONS_PER_CALL);
    const entry = this.tokens.get(subject) ?? { log: new TokenLog(), idleAt: now };
    entry.log.add(now, tokens, windowMs);
    entry.idleAt = entry.log.idleAt(windowMs);
    this.tokens.set(subject, entry);
    return Promise.resolve();
  }

  /** Drops every idle subject now (the periodic sweep; callable directly). Returns how many were dropped. */
  sweep(): number {
    const now = this.now();
    return this.requests.evictIdle(now) + this.tokens.evictIdle(now);
  }

  close(): Promise<void> {
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    this.requests.clear();
    this.tokens.clear();
    return Promise.resolve();
  }
}
