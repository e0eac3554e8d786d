import type { Logger } from 'pino';

interface Outage {
  since: number;
  /** Events of the current interval, by kind (`requests answered 503`, `settlements journaled`, …). */
  interval: Map<string, number>;
  totals: Map<string, number>;
}

/**
 * The log of a dependency outage (the database, Redis): one warning when it starts, with the error, then one
 * line per interval with how many requests it touched, by kind, and one when an interval passes without any
 * failure. Under load an outage touches thousands of requests a second; a line for each (error level, with a
 * stack) buried everything else in the log.
 */
export class OutageLog {
  private readonly outages = new Map<string, Outage>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Pick<Logger, 'warn' | 'info'>,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** One request (or background task) that failed because `dependency` is unavailable. */
  record(dependency: string, kind: string, error?: unknown): void {
    let outage = this.outages.get(dependency);
    if (outage === undefined) {
      outage = { since: this.now(), interval: new Map(), totals: new Map() };
      this.outages.set(dependency, outage);
      this.logger.warn(
        { dependency, event: kind, ...(error === undefined ? {} : { err: error }) },
        `${dependency} unavailable: ${kind}; counts follow every ${this.intervalMs / 1000} s`,
      );
      this.timer ??= setInterval(() => this.summarize(), this.intervalMs).unref();
    }
    outage.interval.set(kind, (outage.interval.get(kind) ?? 0) + 1);
    outage.totals.set(kind, (outage.totals.get(kind) ?? 0) + 1);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private summarize(): void {
    for (const [dependency, outage] of this.outages) {
      const seconds = Math.round((this.now() - outage.since) / 1000);
      if (outage.interval.size > 0) {
        this.logger.warn(
          { dependency, counts: Object.fromEntries(outage.interval), outageSeconds: seconds },
          `${dependency} still unavailable`,
        );
        outage.interval.clear();
      } else {
        this.logger.info(
          { dependency, totals: Object.fromEntries(outage.totals), outageSeconds: seconds },
          `${dependency}: no failure in the last ${this.intervalMs / 1000} s`,
        );
        this.outages.delete(dependency);
      }
    }
    if (this.outages.size === 0) this.stop();
  }
}
