import { splitUsage } from '../../src/billing/usage-split.js';
import type { ModelPrices } from '../../src/billing/prices.js';
import { emptyUsage, type CanonicalUsage } from '../../src/canonical/usage.js';
import type { SettlementPricer } from '../../src/storage/billing-types.js';

/** Every price one nano-USD a token. */
const ONE_NANO = { input: 1n, output: 1n, cacheRead: 1n, cacheWrite: 1n, cacheWrite1h: 1n };

/**
 * A pricer for a reply that costs `nano` at list price: the settlement rule's split of `nano` tokens at one nano-USD
 * each (free tokens first, then money within the room, the rest unbilled), for storage tests that need a charge. An
 * amount past 2^53 is one token at that price.
 */
export const costing =
  (nano: bigint): SettlementPricer =>
  (room) =>
    nano > BigInt(Number.MAX_SAFE_INTEGER)
      ? splitUsage({ ...emptyUsage(), inputTokens: 1 }, { ...ONE_NANO, input: nano }, room)
      : splitUsage({ ...emptyUsage(), inputTokens: Number(nano) }, ONE_NANO, room);

/** The split of a usage when money is no limit and `freeTokens` are free: its charge at list price beyond them. */
export function priceSettlement(
  usage: CanonicalUsage,
  prices: ModelPrices,
  freeTokens: number,
): { chargeNano: bigint; freeTokensUsed: number } {
  const split = splitUsage(usage, prices, { freeTokens, moneyNano: [2n ** 63n - 1n] });
  return { chargeNano: split.billedNano, freeTokensUsed: split.freeTokens };
}
