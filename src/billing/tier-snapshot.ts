import type { TierStatus } from './tier-upgrades.js';

/** A tier status as the audit log keeps it: which tier is in force, from where, and what was bought. */
export function tierSnapshot(status: TierStatus) {
  return { tier: status.current.name, source: status.source, grantedTier: status.grantedTier, bought: status.bought };
}
