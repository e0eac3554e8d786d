import type { ModelPrices } from './prices.js';

/** What billing reads of a model (the catalog's models have it): the usage record's names, prices and limits. */
export interface PricedModel {
  /** The public model id. */
  id: string;
  family: string;
  /** Largest output the model may produce in one reply: the most a hold may grow to. */
  maxOutputTokens: number;
  /** Per-token prices in nano-USD. */
  prices: ModelPrices;
  /** Output tokens a hold grows by at a time; `outputSliceOf` gives the default when unset. */
  outputSliceTokens?: number;
  /** The vendor bills a request that searched the web as one search, however many it ran (beta's search models). */
  webSearchBilledPerRequest?: boolean;
}

/**
 * Default slice: 2,048 output tokens, or the model's whole limit when lower. A typical chat or agent reply is a
 * few hundred tokens, so it needs no slice beyond the first (no storage call beyond admission and settlement);
 * 20 such holds on alpha-opus-4-8 ($25/M output) are $1.02, so a $5 account runs 20 requests at once.
 */
export const DEFAULT_OUTPUT_SLICE_TOKENS = 2_048;

export function outputSliceOf(model: Pick<PricedModel, 'outputSliceTokens' | 'maxOutputTokens'>): number {
  return Math.max(1, Math.min(model.outputSliceTokens ?? DEFAULT_OUTPUT_SLICE_TOKENS, model.maxOutputTokens));
}
