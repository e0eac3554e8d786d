import type { Mailer } from '../identity/mailer.js';
import type { AlertRepository, ClaimedDelivery, DeliveryAttempt } from '../storage/alert-types.js';
import type { OrganisationRepository } from '../storage/organisation-types.js';
import type { WebhookSender } from '../telemetry/webhooks/webhook-sender.js';
import { alertMail, type AlertEvent } from './alert-payload.js';

export interface DeliveryRetryPolicy {
  /** Attempts per delivery, the first included; the last failure marks it failed. */
  maxAttempts: number;
  /** The first retry is due within this long; each next one within twice as long, capped at `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface AlertDeliveryWorkerOptions {
  alerts: AlertRepository;
  organisations: OrganisationRepository;
  /** Sends one attempt per call (its own retries off): the retries are this worker's, persisted. */
  sender: WebhookSender;
  mailer: Mailer | undefined;
  /** This instance, as the leases name it. */
  owner: string;
  retry: DeliveryRetryPolicy;
  /** How long a claimed delivery is this instance's before another may take it over (a crash mid-send). */
  leaseMs: number;
  now: () => number;
  /** 0 ≤ x < 1; the jitter's source. */
  random?: () => number;
  onFailure?: (delivery: ClaimedDelivery['delivery'], error: string) => void;
}

/** The roles whose members get an organisation's alert mail when the rule lists no addresses. */
const NOTIFIED_ROLES = new Set(['owner', 'admin', 'billing']);

/**
 * Sends the queued deliveries: claims the due ones under a lease, makes one attempt each, and stores the outcome
 * with the next retry's time (exponential backoff with full jitter). The queue is the `alert_deliveries` table, so
 * a restart or another instance picks up where this one stopped.
 */
export class AlertDeliveryWorker {
  private readonly random: () => number;

  constructor(private readonly options: AlertDeliveryWorkerOptions) {
    this.random = options.random ?? Math.random;
  }

  /** Attempts every delivery due now (in batches); resolves with how many it attempted. */
  async runDue(batchSize = 20): Promise<number> {
    const { alerts, owner, leaseMs, now } = this.options;
    let attempted = 0;
    for (;;) {
      const claimed = await alerts.claimDue(owner, now(), leaseMs, batchSize);
      if (claimed.length === 0) return attempted;
      await Promise.all(claimed.map((item) => this.attempt(item)));
      attempted += claimed.length;
      if (claimed.length < batchSize) return attempted;
    }
  }

  private async attempt(item: ClaimedDelivery): Promise<void> {
    const outcome = await this.send(item);
    const at = this.options.now();
    const attempts = item.delivery.attempts + 1;
    const retry = !outcome.delivered && outcome.retryable && attempts < this.options.retry.maxAttempts;
    const attempt: DeliveryAttempt = {
      delivered: outcome.delivered,
      statusCode: outcome.statusCode,
      error: outcome.error,
      nextAttemptAt: retry ? at + this.backoff(attempts) : null,
      at,
    };
    if (!outcome.delivered && outcome.error !== null) this.options.onFailure?.(item.delivery, outcome.error);
    await this.options.alerts.recordAttempt(item.delivery.id, this.options.owner, attempt);
  }

  /** Full jitter: uniformly up to base × 2^(attempt−1), capped, so retries of many deliveries do not come in step. */
  private backoff(attempts: number): number {
    const { baseDelayMs, maxDelayMs } = this.options.retry;
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempts - 1));
    return Math.max(1, Math.floor(this.random() * ceiling));
  }

  private async send(
    item: ClaimedDelivery,
  ): Promise<{ delivered: boolean; retryable: boolean; statusCode: number | null; error: string | null }> {
    const { rule, delivery, payload } = item;
    if (rule === null) return { delivered: false, retryable: false, statusCode: null, error: 'the rule was deleted' };
    if (delivery.channel === 'webhook') {
      if (rule.webhookUrl === null || rule.webhookSecret === null)
        return { delivered: false, retryable: false, statusCode: null, error: 'the rule has no webhook now' };
      const result = await this.options.sender.deliver({
        url: rule.webhookUrl,
        secret: rule.webhookSecret,
        body: payload,
        // The receiver's idempotency key: a retry after a lost answer carries the same one.
        headers: { 'idempotency-key': delivery.id },
      });
      if (result.ok) return { delivered: true, retryable: false, statusCode: result.status, error: null };
      // A refused URL (attempts 0) or a receiver's 4xx other than the busy ones will not change by waiting.
      const retryable =
        result.attempts > 0 &&
        (result.status === undefined || result.status >= 500 || [408, 425, 429].includes(result.status));
      return { delivered: false, retryable, statusCode: result.status ?? null, error: result.error };
    }
    const mailer = this.options.mailer;
    if (mailer === undefined)
      return { delivered: false, retryable: false, statusCode: null, error: 'mail is not configured' };
    try {
      const recipients = await this.recipients(rule.organisationId, rule.emailTo);
      if (recipients.length === 0)
        return { delivered: false, retryable: false, statusCode: null, error: 'no one to mail' };
      const organisation = await this.options.organisations.findById(rule.organisationId);
      const mail = alertMail(JSON.parse(payload) as AlertEvent, organisation?.name ?? rule.organisationId);
      await mailer.send({ to: recipients.join(', '), subject: mail.subject, text: mail.text });
      return { delivered: true, retryable: false, statusCode: null, error: null };
    } catch (error) {
      return { delivered: false, retryable: true, statusCode: null, error: (error as Error).message };
    }
  }

  private async recipients(organisationId: string, listed: string[] | null): Promise<string[]> {
    if (listed !== null) return listed;
    const members = await this.options.organisations.members(organisationId);
    return members.filter((member) => NOTIFIED_ROLES.has(member.role)).map((member) => member.email);
  }
}
