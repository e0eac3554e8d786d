import { formatUsd } from '../../billing/money.js';

/** Tollgate's extension to both protocols' usage objects: what the request cost the account. */
export interface CostFields {
  /** USD as an exact decimal string, e.g. "0.000318". */
  cost: string;
  /** The same amount in nano-USD, as a decimal string (it may exceed what a JSON number holds exactly). */
  cost_nano_usd: string;
}

export function costFields(costNano: bigint): CostFields {
  return { cost: formatUsd(costNano), cost_nano_usd: costNano.toString() };
}

export const COST_HEADER = 'x-tollgate-cost-usd';
