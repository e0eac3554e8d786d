import type { UsageEvent } from './usage-event.js';

/** Where a batch of usage events goes. `deliver` resolves once the destination has the whole batch durably. */
export interface UsageSink {
  readonly name: string;
  readonly kind: 'webhook' | 'ndjson';
  /** Rejects (with a message free of secrets) when the destination did not take the batch; it is sent again later. */
  deliver(events: readonly UsageEvent[]): Promise<void>;
  close(): Promise<void>;
}

export class SinkDeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SinkDeliveryError';
  }
}
