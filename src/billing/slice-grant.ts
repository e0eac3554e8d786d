import type { AdmissionState, SlicePlan } from '../storage/billing-types.js';
import { affordableUnits, type NanoUsd } from './money.js';

/**
 * One more slice of output on a live hold (docs/architecture.md#holds-that-grow), from the state storage reads under
 * the wallet row's lock: free tokens first, then money at the output price within what the account (or the key's
 * remaining limit, when lower) has; less than asked when only that is left; refused when not one token is.
 */
export function planSliceGrant(tokens: number, outputPriceNano: NanoUsd, state: AdmissionState): SlicePlan {
  const wanted = Math.max(0, tokens);
  const free = Math.min(Math.max(0, state.freeTokensLeft), wanted);
  const wantedPaid = wanted - free;
  const affordablePaid = affordableUnits(wantedPaid, outputPriceNano, state.availableNano);
  const granted = free + affordablePaid;
  if (granted < 1) return { granted: false, reason: state.spendLimit?.binding === true ? 'spend_limit' : 'balance' };
  return { granted: true, tokens: granted, holdNano: BigInt(affordablePaid) * outputPriceNano, freeTokens: free };
}
