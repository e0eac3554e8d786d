import type { AdmissionState, SlicePlan } from '../storage/billing-types.js';
import { affordableUnits, type NanoUsd } from './money.js';

/**
 * One more slice of output on a live hold (docs/architecture.md#holds-that-grow), from the state storage reads under
 * the wallet row's lock: free tokens first, then money at the output price within what the account (or the key's
 * remaining limit, when lower) has; less than asked when only that is left; refused when not one token is. A `whole`
 * slice (one sized by bytes, docs/decisions/0021) is refused unless all of it is there: the request then asks again
 * by its exact count, so one oversized ask never takes the last of a balance from the account's other requests.
 */
export function planSliceGrant(
  tokens: number,
  outputPriceNano: NanoUsd,
  state: AdmissionState,
  whole = false,
): SlicePlan {
  const wanted = Math.max(0, tokens);
  const free = Math.min(Math.max(0, state.freeTokensLeft), wanted);
  const wantedPaid = wanted - free;
  const affordablePaid = affordableUnits(wantedPaid, outputPriceNano, state.availableNano);
  const granted = free + affordablePaid;
  if (granted < 1 || (whole && granted < wanted))
    return { granted: false, reason: state.spendLimit?.binding === true ? 'spend_limit' : 'balance' };
  return { granted: true, tokens: granted, holdNano: BigInt(affordablePaid) * outputPriceNano, freeTokens: free };
}
