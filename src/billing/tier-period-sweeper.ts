import type { Logger } from 'pino';
import type { OutageLog } from '../observability/outage-log.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import type { TierUpgrades } from './tier-upgrades.js';

/**
 * Renews or ends bought tiers whose period is over, on every instance (each renewal is one ledger entry keyed by
 * the period, so two instances sweeping at once charge it once). A period ends at most one interval late.
 */
export function startTierPeriodSweeper(
  tiers: TierUpgrades,
  logger: Logger,
  intervalMs: number,
  outages?: OutageLog,
): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    tiers
      .settleEndedPeriods()
      .then((count) => {
        if (count > 0) logger.info({ accounts: count }, 'bought tier periods renewed or ended');
      })
      .catch((error: unknown) => {
        if (outages !== undefined && isStorageUnavailable(error))
          outages.record('storage', 'tier period sweeps failed', error);
        else logger.error({ err: error }, 'tier period sweep failed');
      })
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
