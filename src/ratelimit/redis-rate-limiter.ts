import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  assertLimitArguments,
  assertTokenCount,
  decision,
  DEFAULT_WINDOW_MS,
  RateLimiterUnavailableError,
  type RateLimitDecision,
  type RateLimiter,
} from './rate-limiter.js';
import { CHECK_TOKENS_SCRIPT, RECORD_TOKENS_SCRIPT, SLIDING_WINDOW_SCRIPT } from './redis-scripts.js';

export interface RedisRateLimiterOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS). */
  redisUrl: string;
  /**
   * What a decision does when Redis cannot answer (down, slow, unreachable). Fail-open (default) admits the
   * request: a limiter outage should not become a gateway outage, and billing still guards spend. Fail-closed
   * throws `RateLimiterUnavailableError`, which the HTTP layer maps to 503. Either way the failure is counted
   * in `failures` and passed to `onError`.
   */
  failOpen?: boolean;
  /** Prefix of every key; requests use `<prefix>rl:<subject>`, tokens `<prefix>tpm:<subject>`. */
  keyPrefix?: string;
  /** Longest wait for one decision before it counts as failed. */
  commandTimeoutMs?: number;
  /** Longest wait for the TCP connection (a black-holed host would otherwise take the OS timeout). */
  connectTimeoutMs?: number;
  /** Called once per failed decision or token write, with the cause. It must not throw (it is shielded anyway). */
  onError?: (error: Error) => void;
}

export const DEFAULT_KEY_PREFIX = 'tollgate:';
/**
 * A healthy Redis answers in well under a millisecond, but the timeout is measured on our side, so it also
 * counts our own event-loop delay. A timed-out check may still have run in Redis and refused the request, and
 * fail-open admits it anyway, so more than the limit get through. Seen: at 200 ms
 * the three-instance test under 300 concurrent requests admitted 101 of 100. One second is far above any
 * event-loop stall of a healthy gateway and still short enough that a dead Redis does not stall requests long.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 1_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 1_000;

/** The commands `defineCommand` adds to the client; each is EVALSHA (EVAL once on NOSCRIPT) of one script. */
interface LimiterCommands {
  tollgateSlidingWindow(key: string, limit: number, windowMs: number, member: string): Promise<unknown>;
  tollgateRecordTokens(key: string, tokens: number, windowMs: number): Promise<unknown>;
  tollgateCheckTokens(key: string, limit: number, windowMs: number): Promise<unknown>;
}

/**
 * The shared limiter (the scale-out shape, docs/architecture.md#runtime-shapes): every instance pointed at the same
 * Redis shares one budget per subject. One decision = one script = one round trip; see `redis-scripts.ts` for the
 * algorithm. Call `connect()` before the first check (`createRateLimiter` does): while not connected, every decision
 * follows the failure policy at once rather than waiting.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly commands: LimiterCommands;
  private readonly failOpen: boolean;
  private readonly keyPrefix: string;
  private readonly onError: ((error: Error) => void) | undefined;
  /** Members must be unique per admission even within one ms across instances: random instance id + counter. */
  private readonly instanceId = randomBytes(9).toString('base64url');
  private sequence = 0;
  private lastConnectionError: Error | undefined;
  private failureCount = 0;
  /** The socket is corked until the end of this tick (see writeTogether). */
  private corked = false;

  constructor(options: RedisRateLimiterOptions) {
    this.failOpen = options.failOpen ?? true;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.onError = options.onError;
    this.redis = new Redis(options.redisUrl, {
      // Connect explicitly (`connect()`), so start-up can wait for the link instead of failing its first checks.
      lazyConnect: true,
      commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      // While disconnected, fail at once instead of queueing: a queued check would either wait past the
      // timeout or, worse, run after reconnecting and consume budget for a request already decided.
      enableOfflineQueue: false,
      // For the same reason a check whose reply was lost with the connection is never re-sent.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Keep reconnecting in the background (ioredis default back-off, capped at 2 s) so service resumes alone.
    });
    // Without a listener ioredis prints every reconnect failure; we keep the last one to explain check failures.
    this.redis.on('error', (error: Error) => {
      this.lastConnectionError = error;
    });
    this.redis.defineCommand('tollgateSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW_SCRIPT });
    this.redis.defineCommand('tollgateRecordTokens', { numberOfKeys: 1, lua: RECORD_TOKENS_SCRIPT });
    this.redis.defineCommand('tollgateCheckTokens', { numberOfKeys: 1, lua: CHECK_TOKENS_SCRIPT });
    this.commands = this.redis as unknown as LimiterCommands;
  }

  /** Failed decisions and token writes since start (fail-open admissions included), for metrics. */
  get failures(): number {
    return this.failureCount;
  }

  /**
   * Opens the connection, waiting at most the connect timeout. Resolves false (after reporting the error) when
   * Redis is unreachable: the gateway still starts, decisions follow the failure policy, and ioredis keeps
   * reconnecting in the background.
   */
  async connect(): Promise<boolean> {
    try {
      await this.redis.connect();
      return true;
    } catch (error) {
      this.report(this.explain(error));
      return false;
    }
  }

  async check(subject: string, limit: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<RateLimitDecision> {
    assertLimitArguments(limit, windowMs);
    this.writeTogether();
    try {
      const reply = await this.commands.tollgateSlidingWindow(
        this.requestsKey(subject),
        limit,
        windowMs,
        this.nextMember(),
      );
      const [allowed, used, resetMs] = parseTriple(reply);
      return decision(allowed === 1, limit, used, resetMs);
    } catch (error) {
      return this.failedDecision(error, limit, 1);
    }
  }

  async checkTokens(subject: string, limit: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<RateLimitDecision> {
    assertLimitArguments(limit, windowMs);
    this.writeTogether();
    try {
      const reply = await this.commands.tollgateCheckTokens(this.tokensKey(subject), limit, windowMs);
      const [allowed, used, resetMs] = parseTriple(reply);
      return decision(allowed === 1, limit, used, resetMs);
    } catch (error) {
      return this.failedDecision(error, limit, 0);
    }
  }

  async recordTokens(subject: string, tokens: number, windowMs: number = DEFAULT_WINDOW_MS): Promise<void> {
    assertTokenCount(tokens);
    assertLimitArguments(1, windowMs);
    if (tokens === 0) return;
    try {
      await this.commands.tollgateRecordTokens(this.tokensKey(subject), tokens, windowMs);
    } catch (error) {
      // Whatever the policy: the response is already served, so a lost write only loosens the next check.
      this.failureCount += 1;
      this.report(this.explain(error));
    }
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') {
      try {
        await this.redis.quit();
        return;
      } catch {
        // Fall through to a hard disconnect.
      }
    }
    this.redis.disconnect();
  }

  /**
   * Commands issued in the rest of this tick leave in one socket write: under load a turn's key lookups
   * come back together (postgres-key-lookup-batch.ts) and their requests' checks follow in the same tick, each of
   * which was its own write, ~25 µs of CPU apiece on this machine's loopback. Only the write is shared: every
   * command is still sent, answered and timed out on its own, and nothing waits beyond the current tick.
   * (ioredis's enableAutoPipelining shares the write too, but costs more in JavaScript than the writes it saves.)
   */
  private writeTogether(): void {
    if (this.corked || this.redis.status !== 'ready') return;
    const stream = this.redis.stream;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  private requestsKey(subject: string): string {
    return `${this.keyPrefix}rl:${subject}`;
  }

  private tokensKey(subject: string): string {
    return `${this.keyPrefix}tpm:${subject}`;
  }

  private nextMember(): string {
    this.sequence = (this.sequence + 1) % Number.MAX_SAFE_INTEGER;
    return `${this.instanceId}:${this.sequence.toString(36)}`;
  }

  /**
   * Fail-open admits as a fresh window would (`remaining = limit − 1` for a request, `limit` for tokens), so a
   * client keeps pacing instead of bursting. Nothing is recorded, so the outage's admissions are not charged
   * afterwards.
   */
  private failedDecision(error: unknown, limit: number, used: number): RateLimitDecision {
    this.failureCount += 1;
    const cause = this.explain(error);
    this.report(cause);
    if (!this.failOpen) throw new RateLimiterUnavailableError(`Rate limiter unavailable: ${cause.message}`, { cause });
    return decision(true, limit, used, 0);
  }

  /** ioredis reports "Stream isn't writeable" while disconnected; name the connection error behind it. */
  private explain(error: unknown): Error {
    const failure = asError(error);
    if (this.redis.status === 'ready' || this.lastConnectionError === undefined) return failure;
    return new Error(`Redis is ${this.redis.status} (${this.lastConnectionError.message}): ${failure.message}`, {
      cause: failure,
    });
  }

  private report(error: Error): void {
    if (this.onError === undefined) return;
    try {
      this.onError(error);
    } catch {
      // A failing logger must not turn a limiter failure into a request failure.
    }
  }
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** The scripts return three integers; anything else is a bug or a foreign key, and fails like an outage. */
function parseTriple(reply: unknown): [number, number, number] {
  if (Array.isArray(reply) && reply.length === 3 && reply.every((item): item is number => typeof item === 'number')) {
    return [reply[0] as number, reply[1] as number, reply[2] as number];
  }
  throw new Error(`Unexpected rate limit script reply: ${JSON.stringify(reply)}`);
}
