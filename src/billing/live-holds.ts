import { loadTokenizer, tokenizerLoaded } from '../canonical/count-tokens.js';
import type { BillingStore, HoldCheckpoint, HoldRenewal } from '../storage/billing-types.js';

/** No request runs this long; a hold still here then belongs to a request that will never settle. */
const MAX_RENEWED_HOLD_MS = 6 * 60 * 60_000;

const DEFAULT_CHECKPOINT_INTERVAL_MS = 3_000;

/**
 * The most holds one event-loop turn of the periodic batch reads or renews, and so the most renewals one storage call
 * carries: with 10,000 streams one turn for all of them blocked the loop ~0.5 s (docs/decisions/0024).
 */
export const CHECKPOINT_GROUP_SIZE = 128;

export interface LiveHold {
  admittedAt: number;
  /** The expiry last written. */
  expiresAt: number;
  /** What the request has delivered so far (set once its reply starts): read by the periodic batch. */
  delivered?: () => HoldCheckpoint | undefined;
  /** The output tokens of the checkpoint last written (-1: none yet). */
  checkpointedOutput: number;
  /** The tokenizer's count of the prompt when admission made one, and for which model: calibration's sample. */
  localInputTokens?: number;
  modelId?: string;
}

/** What the ticker needs of the billing settings. */
export interface LiveHoldSettings {
  reservationTtlMs: number;
  checkpointIntervalMs?: number;
}

/**
 * The holds of requests in flight on this instance, and the one timer that renews them and writes their checkpoints
 * (docs/architecture.md#what-a-reply-is-billed-for), so the sweeper never releases the hold of a long stream and a
 * dead instance's holds are billed at what they delivered.
 */
export class LiveHolds {
  private readonly holds = new Map<string, LiveHold>();
  private renewal: NodeJS.Timeout | undefined;
  private renewing = false;

  constructor(
    private readonly repository: Pick<BillingStore, 'renewHolds'>,
    private readonly settings: LiveHoldSettings,
    private readonly now: () => number,
  ) {}

  get(requestId: string): LiveHold | undefined {
    return this.holds.get(requestId);
  }

  set(requestId: string, hold: LiveHold): void {
    this.holds.set(requestId, hold);
  }

  delete(requestId: string): void {
    this.holds.delete(requestId);
  }

  /** What the request has delivered, read by each tick once its reply starts. */
  track(requestId: string, delivered: () => HoldCheckpoint | undefined): void {
    const hold = this.holds.get(requestId);
    if (hold !== undefined) hold.delivered = delivered;
  }

  /**
   * One timer for all live holds (not one per request), every checkpoint interval (at most a third of the TTL):
   * for every live hold that needs it, a renewed expiry and the checkpoint of what its request delivered, written
   * in groups of at most CHECKPOINT_GROUP_SIZE, one storage call and one event-loop turn each (docs/decisions/0024).
   * A hold's expiry is then always at least two thirds of the TTL away while its request runs, a crashed instance's
   * holds expire one TTL after its last batch, and the sweeper then bills each at its last checkpoint: less than
   * two intervals of output (a stream's first checkpoint comes once it has run one) goes unbilled.
   */
  renewRegularly(): void {
    if (this.renewal !== undefined) return;
    const interval = this.checkpointIntervalMs();
    this.renewal = setInterval(() => {
      if (this.renewing) return;
      this.renewing = true;
      this.renewHolds()
        .catch(() => {})
        .finally(() => {
          this.renewing = false;
        });
    }, interval);
    this.renewal.unref();
  }

  /** The interval of the periodic batch: the configured checkpoint interval, at most a third of the TTL. */
  private checkpointIntervalMs(): number {
    return Math.max(
      1,
      Math.min(
        this.settings.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS,
        Math.floor(this.settings.reservationTtlMs / 3),
      ),
    );
  }

  private async renewHolds(): Promise<void> {
    if (this.holds.size === 0) {
      clearInterval(this.renewal);
      this.renewal = undefined;
      return;
    }
    const ttl = this.settings.reservationTtlMs;
    const interval = this.checkpointIntervalMs();
    // A stream due for its first checkpoint loads the tokenizer first, before any expiry is computed: its import
    // holds the event loop a second or more, which would otherwise shorten every renewal of the batch by as much.
    if (!tokenizerLoaded()) {
      const now = this.now();
      for (const hold of this.holds.values())
        if (hold.delivered !== undefined && now - hold.admittedAt >= interval) {
          await loadTokenizer();
          break;
        }
    }
    // The holds are visited in groups, each its own event-loop turn: read the group's checkpoints and hand its
    // renewals to storage in one call, then yield before the next. Holds added meanwhile are visited too (too young
    // to be due), holds settled meanwhile are skipped.
    const holds = this.holds.entries();
    for (let more = true; more; ) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const now = this.now();
      const batch: Array<{ hold: LiveHold; renewal: HoldRenewal }> = [];
      let work = 0;
      more = false;
      for (let next = holds.next(); !next.done; next = holds.next()) {
        const [requestId, hold] = next.value;
        if (now - hold.admittedAt > MAX_RENEWED_HOLD_MS) {
          this.holds.delete(requestId);
          continue;
        }
        // A request younger than one interval is not checkpointed yet: most finish before the next batch, and this
        // way a gateway serving short replies never loads the tokenizer (~50 MB) for checkpoints. A stream's first
        // checkpoint is thus written within two intervals of its start (one due only since the load: the next batch).
        const due = hold.delivered !== undefined && now - hold.admittedAt >= interval && tokenizerLoaded();
        const checkpoint = due ? hold.delivered?.() : undefined;
        const moved = checkpoint !== undefined && checkpoint.outputTokens !== hold.checkpointedOutput;
        const renew = moved || hold.expiresAt - now <= (ttl * 2) / 3;
        if (renew)
          batch.push({
            hold,
            renewal: { requestId, expiresAt: Math.max(hold.expiresAt, now + ttl), ...(moved ? { checkpoint } : {}) },
          });
        if (due || renew) work += 1;
        if (work >= CHECKPOINT_GROUP_SIZE) {
          more = true;
          break;
        }
      }
      if (batch.length > 0) await this.write(batch);
    }
  }

  /**
   * One group's renewals in one storage call. A failed write ends the batch and is retried on the next tick
   * (nothing is marked written); a hold that is gone (settled meanwhile) is forgotten.
   */
  private async write(batch: Array<{ hold: LiveHold; renewal: HoldRenewal }>): Promise<void> {
    const gone = await this.repository.renewHolds(batch.map((entry) => entry.renewal));
    for (const { hold, renewal } of batch) {
      if (gone.has(renewal.requestId)) {
        this.holds.delete(renewal.requestId);
        continue;
      }
      hold.expiresAt = renewal.expiresAt;
      if (renewal.checkpoint !== undefined) hold.checkpointedOutput = renewal.checkpoint.outputTokens;
    }
  }
}
