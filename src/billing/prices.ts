import { cacheWrite5mTokens, type CanonicalUsage } from '../canonical/usage.js';
import { parseUsd, type NanoUsd } from './money.js';

/** Per-token prices in nano-USD. A price per 1M tokens of $X is X × 1000 nano-USD per token, always exact. */
export interface ModelPrices {
  input: NanoUsd;
  output: NanoUsd;
  cacheRead: NanoUsd;
  /** A prompt token written to the cache for 5 minutes (the default lifetime). */
  cacheWrite: NanoUsd;
  /** A prompt token written to the cache for 1 hour. */
  cacheWrite1h: NanoUsd;
  /** One web search the vendor ran (absent: the model has none, or it is free). */
  webSearchRequest?: NanoUsd;
  /** One web fetch the vendor ran. */
  webFetchRequest?: NanoUsd;
}

/** Prices as operators write them: USD per 1M tokens, as decimal strings. */
export interface ModelPricesPerMillion {
  input: string;
  output: string;
  cacheRead?: string;
  cacheWrite?: string;
  cacheWrite1h?: string;
  /** Nano-USD per web search the vendor runs (integer text, e.g. `10000000` for $10 per 1,000). */
  webSearchRequestNano?: string;
  /** Nano-USD per web fetch. */
  webFetchRequestNano?: string;
}

const TOKENS_PER_MILLION = 1_000_000n;

/** USD per 1M tokens → nano-USD per token; refused when not exact (a price below 1e-15 USD per token). */
export function perTokenPrice(usdPerMillion: string): NanoUsd {
  const perMillion = parseUsd(usdPerMillion);
  const perToken = perMillion / TOKENS_PER_MILLION;
  if (perToken * TOKENS_PER_MILLION !== perMillion) {
    throw new RangeError(`A price of $${usdPerMillion} per 1M tokens is not a whole number of nano-USD per token.`);
  }
  return perToken;
}

export function pricesFromPerMillion(prices: ModelPricesPerMillion): ModelPrices {
  const input = perTokenPrice(prices.input);
  const cacheWrite = prices.cacheWrite === undefined ? input : perTokenPrice(prices.cacheWrite);
  return {
    input,
    output: perTokenPrice(prices.output),
    // Vendors without a cache price bill cached input like any input; without a 1-hour price, a 1-hour write
    // costs what a 5-minute one does (vendors with no write premium bill both as input).
    cacheRead: prices.cacheRead === undefined ? input : perTokenPrice(prices.cacheRead),
    cacheWrite,
    cacheWrite1h: prices.cacheWrite1h === undefined ? cacheWrite : perTokenPrice(prices.cacheWrite1h),
    ...(prices.webSearchRequestNano === undefined ? {} : { webSearchRequest: BigInt(prices.webSearchRequestNano) }),
    ...(prices.webFetchRequestNano === undefined ? {} : { webFetchRequest: BigInt(prices.webFetchRequestNano) }),
  };
}

/**
 * A usage's token counts beside the price of each, in the order free tokens cover them (uncached input, cache
 * reads, 5-minute writes, 1-hour writes, output). Cache writes are split by lifetime: `cacheWrite1hTokens` is a
 * part of `cacheWriteTokens`, priced at `cacheWrite1h`; the rest at `cacheWrite`.
 */
export function pricedParts(usage: CanonicalUsage, prices: ModelPrices): Array<[tokens: number, price: NanoUsd]> {
  return [
    [usage.inputTokens, prices.input],
    [usage.cacheReadTokens, prices.cacheRead],
    [cacheWrite5mTokens(usage), prices.cacheWrite],
    [Math.min(usage.cacheWrite1hTokens, usage.cacheWriteTokens), prices.cacheWrite1h],
    [usage.outputTokens, prices.output],
  ];
}

/** The exact cost of a usage, in nano-USD. Reasoning tokens are part of output and priced as output. */
export function costOfUsage(usage: CanonicalUsage, prices: ModelPrices): NanoUsd {
  let cost = 0n;
  for (const [tokens, price] of pricedParts(usage, prices)) cost += BigInt(tokens) * price;
  return cost;
}
