import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { ConcurrencyGate } from './concurrency-gate.js';
import { ForbiddenDestinationError, guardedLookup, type ResolveAll } from './guarded-lookup.js';
import { webhookUrlProblem, type WebhookUrlPolicy } from './url-policy.js';
import { SIGNATURE_HEADER, signatureHeader } from './webhook-signature.js';

export interface WebhookSenderOptions {
  policy: WebhookUrlPolicy;
  /** Attempts per delivery, the first included. */
  maxAttempts: number;
  /** The first retry waits up to this long; each next one up to twice as long, capped at `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Per attempt: connecting, the response's headers, and its body each within this long. */
  timeoutMs: number;
  /** Deliveries in flight at once, over every receiver of this sender. */
  concurrency: number;
  /** Host name resolution (tests resolve names to chosen addresses). */
  resolveAll?: ResolveAll;
  /** 0 ≤ x < 1; the jitter's source (tests fix it). */
  random?: () => number;
  /** Certificate authorities trusted instead of Node's (tests' self-signed receivers); NODE_EXTRA_CA_CERTS otherwise. */
  ca?: string;
}

export interface WebhookDelivery {
  url: string;
  /** The receiver's shared secret: the body is signed with it (`Tollgate-Signature`). */
  secret: string;
  /** The exact bytes sent and signed (JSON text). */
  body: string;
  /** Extra headers (an idempotency key). */
  headers?: Readonly<Record<string, string>>;
}

export type DeliveryResult =
  | { ok: true; attempts: number; status: number }
  | { ok: false; attempts: number; status: number | undefined; error: string };

/** Responses worth another attempt: the receiver is busy, overloaded or failing, not refusing the request. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/**
 * Signed POSTs of JSON to receivers the operator configured, with bounded retries (exponential backoff with full
 * jitter), timeouts and bounded concurrency. Connections go only to addresses the URL policy allows, checked on
 * the connection itself (guarded-lookup.ts). Reusable by anything that notifies an outside receiver.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly gate: ConcurrencyGate;
  private readonly closing = new AbortController();
  private readonly random: () => number;

  constructor(private readonly options: WebhookSenderOptions) {
    this.gate = new ConcurrencyGate(options.concurrency);
    this.random = options.random ?? Math.random;
    this.agent = new Agent({
      connect: {
        lookup: guardedLookup({ allowLoopback: options.policy.allowHttpLoopback }, options.resolveAll),
        timeout: options.timeoutMs,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connections: options.concurrency,
    });
  }

  /** Delivers once accepted (a 2xx) or after the last attempt; never throws. */
  deliver(delivery: WebhookDelivery): Promise<DeliveryResult> {
    return this.gate.run(() => this.deliverNow(delivery));
  }

  /** Stops waiting retries (each delivery then reports its last failure) and closes the connections. */
  async close(): Promise<void> {
    this.closing.abort();
    await this.agent.close();
  }

  private async deliverNow(delivery: WebhookDelivery): Promise<DeliveryResult> {
    const problem = webhookUrlProblem(delivery.url, this.options.policy);
    if (problem !== null) return { ok: false, attempts: 0, status: undefined, error: `webhook URL ${problem}` };
    let last: DeliveryResult = { ok: false, attempts: 0, status: undefined, error: 'not attempted' };
    for (let attempt = 1; attempt <= this.options.maxAttempts; attempt += 1) {
      if (this.closing.signal.aborted) return last;
      const outcome = await this.attempt(delivery);
      if (outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300)
        return { ok: true, attempts: attempt, status: outcome.status };
      last = { ok: false, attempts: attempt, status: outcome.status, error: outcome.error };
      if (!outcome.retryable || attempt === this.options.maxAttempts) return last;
      await sleep(this.backoff(attempt), undefined, { signal: this.closing.signal }).catch(() => undefined);
    }
    return last;
  }

  /** Full jitter: uniformly up to base × 2^(attempt−1), capped, so failing senders do not retry in step. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    return Math.floor(this.random() * ceiling);
  }

  private async attempt(
    delivery: WebhookDelivery,
  ): Promise<{ status: number | undefined; error: string; retryable: boolean }> {
    // Signed per attempt: a retry after a long backoff still falls within the receiver's tolerance.
    const signature = signatureHeader(delivery.secret, delivery.body, Math.floor(Date.now() / 1000));
    try {
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tollgate-Webhooks/1',
          ...delivery.headers,
          [SIGNATURE_HEADER]: signature,
        },
        body: delivery.body,
        signal: AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.closing.signal]),
      });
      // The body is not needed; reading it frees the connection for the next delivery.
      await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      return {
        status: response.statusCode,
        error: `the receiver answered ${response.statusCode}`,
        retryable: retryableStatus(response.statusCode),
      };
    } catch (error) {
      const refused = causeChain(error).find((cause) => cause instanceof ForbiddenDestinationError);
      if (refused !== undefined) return { status: undefined, error: refused.message, retryable: false };
      return { status: undefined, error: describeNetworkError(error), retryable: true };
    }
  }
}

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && chain.length < 5; current = (current as Error).cause)
    chain.push(current);
  return chain;
}

/** The error's code and message, never the request (its headers carry the signature). */
function describeNetworkError(error: unknown): string {
  const innermost = causeChain(error).at(-1) as (Error & { code?: string }) | undefined;
  if (innermost === undefined) return 'request failed';
  return innermost.code === undefined ? innermost.message : `${innermost.code}: ${innermost.message}`;
}
