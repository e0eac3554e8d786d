import type { Logger } from 'pino';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import type { OutageLog } from '../observability/outage-log.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import type { BillingService } from './billing-service.js';

const SWEEP_INTERVAL_MS = 30_000;

/**
 * Claims holds left by requests that never settled (an instance killed mid-request) once they expire: a hold with
 * a checkpoint of delivered output is settled at it (`instance_lost`: input plus the output delivered by then),
 * one without is released free. Safe on every instance at once: each claims its reservation by deleting it. The
 * counts are logged and exported (`tollgate_orphaned_reservations_settled_total`, `…_released_total`).
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
      .sweepExpired()
      .then((swept) => {
        released += swept.released + swept.settled;
        metrics.orphanedReservationsReleased(swept.released);
        metrics.orphanedReservationsSettled(swept.settled);
        for (const { model, tokens, nanoUsd } of swept.unbilled) metrics.usageUnbilled(model, tokens, nanoUsd);
        if (swept.released + swept.settled > 0)
          // The counts only: the unbilled amounts are bigints, which the log's JSON cannot carry.
          logger.warn(
            { released: swept.released, settled: swept.settled },
            'swept orphaned reservations (settled at their checkpoint, or released)',
          );
      })
      .catch((error: unknown) => {
        if (outages !== undefined && isStorageUnavailable(error))
          outages.record('storage', 'reservation sweeps failed', error);
        else logger.error({ err: error }, 'reservation sweep failed');
      })
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), released: () => released };
}
