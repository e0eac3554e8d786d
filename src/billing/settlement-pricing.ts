import type { CanonicalUsage } from '../canonical/usage.js';
import type { NanoUsd } from './money.js';
import { pricedParts, type ModelPrices } from './prices.js';
import { serverToolCharge, type ServerToolCounts } from './server-tool-charge.js';

/**
 * The money a reply costs once the free tokens its reservation held are applied. Free tokens cover input
 * first (uncached, cache reads, 5-minute then 1-hour cache writes), then output: the same order admission planned with, and the
 * order that is kindest to the customer (output is the dearer side). Non-stream and stream replies of the
 * same usage cost the same because this is the only place a charge is computed. Vendor-run tools (web searches)
 * are priced per use on top, never from free tokens.
 */
export function priceSettlement(
  usage: CanonicalUsage & ServerToolCounts,
  prices: ModelPrices,
  freeTokensHeld: number,
): { chargeNano: NanoUsd; freeTokensUsed: number } {
  let free = freeTokensHeld;
  let charge = 0n;
  for (const [tokens, price] of pricedParts(usage, prices)) {
    const covered = Math.min(free, tokens);
    free -= covered;
    charge += BigInt(tokens - covered) * price;
  }
  return { chargeNano: charge + serverToolCharge(usage, prices), freeTokensUsed: freeTokensHeld - free };
}
