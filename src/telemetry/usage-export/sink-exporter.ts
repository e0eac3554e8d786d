import type { ExportPosition, UsageExportRepository } from '../../storage/usage-export-types.js';
import type { UsageExportMetrics } from './export-metrics.js';
import { usageEvent } from './usage-event.js';
import type { UsageSink } from './usage-sink.js';

export interface SinkExporterOptions {
  sink: UsageSink;
  store: UsageExportRepository;
  /** This instance, as the lease names it. */
  owner: string;
  batchSize: number;
  flushIntervalMs: number;
  settleDelayMs: number;
  metrics: UsageExportMetrics;
  /** A failing sink, once per failed flush, without secrets. */
  onFailure: (sink: string, message: string) => void;
  /** A store that could not be read or written (the next flush tries again). */
  onStoreError: (sink: string, error: unknown) => void;
  now: () => number;
}

/** A failing sink is tried again after the flush interval, doubled per failure in a row up to this. */
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Exports one sink off the request path: every flush interval it reads settled records after the sink's stored
 * cursor (keyset pages), hands them to the sink batch by batch, and moves the cursor past a batch only once the
 * sink accepted it. A request never waits for it, and a sink that is down costs one query per flush.
 */
export class SinkExporter {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private failuresInARow = 0;

  constructor(private readonly options: SinkExporterOptions) {}

  start(): void {
    this.schedule(0);
  }

  /** Exports what is there now (tests, and each flush). Resolves with the events accepted. */
  async flush(): Promise<number> {
    const { sink, store, owner, metrics, now } = this.options;
    const leaseMs = Math.max(30_000, this.options.flushIntervalMs * 3);
    const cursor = await store.claimCursor(sink.name, owner, now(), leaseMs);
    // Another instance exports this sink now; this one stands by and takes over when its lease lapses.
    if (cursor === null) return 0;
    let position: ExportPosition | null = cursor.position;
    let accepted = 0;
    try {
      for (;;) {
        const records = await store.pageAfter(position, now() - this.options.settleDelayMs, this.options.batchSize);
        if (records.length === 0) break;
        try {
          await sink.deliver(records.map(usageEvent));
        } catch (error) {
          metrics.failures.inc({ sink: sink.name });
          this.failuresInARow += 1;
          this.options.onFailure(sink.name, (error as Error).message);
          break;
        }
        const last = records[records.length - 1]!;
        const next = { createdAt: last.createdAt, requestId: last.requestId };
        // Lost the lease while sending (a long outage): the new holder sends from the stored cursor; stop here.
        if (!(await store.advanceCursor(sink.name, owner, next, records.length, now()))) break;
        position = next;
        accepted += records.length;
        this.failuresInARow = 0;
        metrics.exported.inc({ sink: sink.name }, records.length);
        metrics.lastSuccess.set({ sink: sink.name }, Math.floor(now() / 1000));
        if (records.length < this.options.batchSize) break;
        await store.claimCursor(sink.name, owner, now(), leaseMs);
      }
    } finally {
      await this.measureLag(position);
    }
    return accepted;
  }

  /** Stops flushing, waits for a flush under way, and gives the lease up for another instance. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.options.store.releaseCursor(this.options.sink.name, this.options.owner).catch(() => undefined);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.flush()
        .then(
          () => undefined,
          (error: unknown) => this.options.onStoreError(this.options.sink.name, error),
        )
        .finally(() => {
          this.running = undefined;
          const backoff = this.options.flushIntervalMs * 2 ** Math.min(this.failuresInARow, 16);
          this.schedule(Math.min(backoff, Math.max(MAX_BACKOFF_MS, this.options.flushIntervalMs)));
        });
    }, delayMs);
    this.timer.unref();
  }

  /** The age of the oldest record the sink has not accepted: one indexed read of one row. */
  private async measureLag(position: ExportPosition | null): Promise<void> {
    const now = this.options.now();
    const [oldest] = await this.options.store.pageAfter(position, now, 1).catch(() => []);
    this.options.metrics.lag.set(
      { sink: this.options.sink.name },
      oldest === undefined ? 0 : (now - oldest.createdAt) / 1000,
    );
  }
}
