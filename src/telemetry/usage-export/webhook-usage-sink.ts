import { createHash } from 'node:crypto';
import type { WebhookSender } from '../webhooks/webhook-sender.js';
import type { UsageEvent } from './usage-event.js';
import { SinkDeliveryError, type UsageSink } from './usage-sink.js';

/** The batch's idempotency key: the same records make the same key, on a retry and after a restart alike. */
export function batchKey(events: readonly UsageEvent[]): string {
  const hash = createHash('sha256');
  for (const event of events) hash.update(event.request_id).update('\n');
  return `usage_batch_${hash.digest('hex').slice(0, 32)}`;
}

/** POSTs each batch, signed, as `{ object: 'usage_batch', id, sink, data: [events] }`. */
export class WebhookUsageSink implements UsageSink {
  readonly kind = 'webhook';

  constructor(
    readonly name: string,
    private readonly target: { url: string; secret: string },
    private readonly sender: WebhookSender,
  ) {}

  async deliver(events: readonly UsageEvent[]): Promise<void> {
    const id = batchKey(events);
    const body = JSON.stringify({ object: 'usage_batch', id, sink: this.name, data: events });
    const result = await this.sender.deliver({
      url: this.target.url,
      secret: this.target.secret,
      body,
      headers: { 'idempotency-key': id, 'tollgate-event-count': String(events.length) },
    });
    if (!result.ok)
      throw new SinkDeliveryError(
        `${result.error} (after ${result.attempts} attempt${result.attempts === 1 ? '' : 's'})`,
      );
  }

  /** The sender is shared by the webhook sinks and closed by their owner. */
  async close(): Promise<void> {}
}
