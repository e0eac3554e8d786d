import type { Logger } from 'pino';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import type { OutageLog } from '../observability/outage-log.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import type { BillingService } from './billing-service.js';

const SWEEP_INTERVAL_MS = 30_000;

/**
 * Releases holds left by requests that never settled (an instance killed mid-request). Safe on every instance
 * at once: each release claims its reservation by deleting it. The count is logged and exported
 * (`tollgate_orphaned_reservations_released_total`).
 */
export function startReservationSweeper(
  billing: BillingService,
  logger: Logger,
  intervalMs = SWEEP_INTERVAL_MS,
  metrics: GatewayMetrics = NO_METRICS,
  /** Where sweeps that find the database unreachable are counted (a line per interval, not per sweep). */
  outages?: OutageLog,
): { stop(): void; released: () => number } {
  let released = 0;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    billing
      .releaseExpired()
      .then((count) => {
        released += count;
        metrics.orphanedReservationsReleased(count);
        if (count > 0) logger.warn({ released: count }, 'released orphaned reservations');
      })
      .catch((error: unknown) => {
        if (outages !== undefined && isStorageUnavailable(error)) outages.record('storage', 'reservation sweeps failed', error);
        else logger.error({ err: error }, 'reservation sweep failed');
      })
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), released: () => released };
}
