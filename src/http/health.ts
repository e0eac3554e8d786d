import type { FastifyInstance } from 'fastify';

/** A dependency the gateway cannot serve without; `check` rejects when it is unreachable. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
  /**
   * The gateway still serves without it (Redis with RATE_LIMIT_FAIL_OPEN): a failure reports `degraded` and
   * leaves the gateway ready, so a load balancer does not take every instance out over it.
   */
  optional?: boolean;
  /** The state a (non-optional) failure reports, when `unavailable` would not say what is wrong. */
  failedState?: string;
}

export interface HealthOptions {
  checks?: readonly ReadinessCheck[];
  /** True while the gateway drains for shutdown: a load balancer should stop sending traffic. */
  closing?: () => boolean;
  /** Per-check bound, so a hung dependency makes the probe fail instead of hang. */
  timeoutMs?: number;
}

/**
 * `/healthz`: the process answers (liveness). `/readyz`: storage and the shared rate limiter answer, the
 * settlement journal can be written, and the gateway is not draining (readiness); 503 with each check's state otherwise (an optional check that fails is
 * `degraded` and keeps the gateway ready). Neither reveals error details.
 */
export function registerHealth(app: FastifyInstance, options: HealthOptions = {}): void {
  const timeoutMs = options.timeoutMs ?? 2_000;
  app.get('/healthz', { config: { public: true } }, async () => ({ status: 'ok' }));
  // Claude Code probes `HEAD {ANTHROPIC_BASE_URL}/api/hello` to warm its connection (and on network checks); a
  // gateway that is Anthropic's stand-in answers it as Anthropic's API does. GET registers HEAD too.
  app.get('/api/hello', { config: { public: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { public: true } }, async (request, reply) => {
    const results = await Promise.all(
      (options.checks ?? []).map(async ({ name, check, optional, failedState }) => {
        try {
          await withTimeout(check(), timeoutMs);
          return { name, state: 'ok', blocks: false };
        } catch (error) {
          request.log.warn({ err: error, check: name }, 'readiness check failed');
          if (optional === true) return { name, state: 'degraded', blocks: false };
          return { name, state: failedState ?? 'unavailable', blocks: true };
        }
      }),
    );
    const checks = Object.fromEntries(results.map(({ name, state }) => [name, state]));
    const ready = results.every(({ blocks }) => !blocks) && options.closing?.() !== true;
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
}

function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
