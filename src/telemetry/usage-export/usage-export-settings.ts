/** One sink as the configuration describes it (config/usage-export-settings.ts reads and checks it). */
export type UsageSinkSettings =
  | {
      type: 'webhook';
      /** The cursor's key: renaming a sink starts it over from the oldest record. */
      name: string;
      url: string;
      secret: string;
      /** Events per POST at most. */
      batchSize: number;
      /** How often the sink looks for newly settled records. */
      flushIntervalMs: number;
      /** Attempts per batch before it waits for the next flush. */
      maxAttempts: number;
      timeoutMs: number;
    }
  | { type: 'ndjson'; name: string; directory: string; batchSize: number; flushIntervalMs: number };

export interface UsageExportSettings {
  sinks: readonly UsageSinkSettings[];
  /**
   * Records younger than this are not exported yet: a request is recorded under its start time when it settles,
   * so one still running (or a dead instance's hold, settled by the sweeper) lands behind newer records.
   */
  settleDelayMs: number;
  /** http:// receivers on loopback, and loopback addresses at all (testing only). */
  allowHttpLoopback: boolean;
}
