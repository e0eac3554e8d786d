import type { Logger } from 'pino';
import type { UsageRepository } from '../storage/types.js';

const MS_PER_DAY = 86_400_000;
/** Rows per DELETE: small enough that one statement holds its locks (and SQLite's write lock) only briefly. */
const BATCH_SIZE = 1_000;
/** Batches per run at most, so one run never occupies the database for long; the next run continues. */
const MAX_BATCHES_PER_RUN = 100;
const RUN_INTERVAL_MS = 60 * 60_000;
/** The first run waits a little, so a starting fleet does not delete at the same moment it migrates. */
const FIRST_RUN_DELAY_MS = 60_000;

/** What a retention pass deletes from: usage rows, or stored Responses (same batch contract). */
export type RetainedRows = Pick<UsageRepository, 'deleteRecordedBefore'>;

export interface UsageRetentionOptions {
  /** Days per-request usage rows are kept; 0 keeps them forever (the job does not run). */
  retentionDays: number;
  now: () => number;
  batchSize?: number;
  maxBatchesPerRun?: number;
  /** What the rows are, for the log line (default: usage records). */
  what?: string;
}

/**
 * One retention pass: deletes per-request usage rows older than the retention period in bounded batches and
 * returns how many went. The daily rollup (usage_daily) is untouched, so daily totals outlive the rows.
 * Safe on every instance at once: each batch deletes whatever old rows still exist; a row already deleted by
 * another instance is simply not counted again.
 */
export async function purgeExpiredUsage(usage: RetainedRows, options: UsageRetentionOptions): Promise<number> {
  if (options.retentionDays <= 0) return 0;
  const cutoff = options.now() - options.retentionDays * MS_PER_DAY;
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const maxBatches = options.maxBatchesPerRun ?? MAX_BATCHES_PER_RUN;
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch += 1) {
    const count = await usage.deleteRecordedBefore(cutoff, batchSize);
    deleted += count;
    if (count < batchSize) break;
  }
  return deleted;
}

/** Runs `purgeExpiredUsage` shortly after start and then hourly, never two passes at once in one process. */
export function startUsageRetention(
  usage: RetainedRows,
  logger: Logger,
  options: UsageRetentionOptions,
): { stop(): void } {
  if (options.retentionDays <= 0) return { stop: () => {} };
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    purgeExpiredUsage(usage, options)
      .then((deleted) => {
        if (deleted > 0)
          logger.info(
            { deleted, retentionDays: options.retentionDays },
            `deleted ${options.what ?? 'usage records'} past retention`,
          );
      })
      .catch((error: unknown) => logger.error({ err: error }, 'usage retention pass failed'))
      .finally(() => {
        running = false;
      });
  };
  const first = setTimeout(run, FIRST_RUN_DELAY_MS);
  const timer = setInterval(run, RUN_INTERVAL_MS);
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
