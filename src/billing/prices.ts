import type { CanonicalUsage } from '../canonical/usage.js';
import { parseUsd, type NanoUsd } from './money.js';

/** Per-token prices in nano-USD. A price per 1M tokens of $X is X × 1000 nano-USD per token, always exact. */
export interface ModelPrices {
  input: NanoUsd;
  output: NanoUsd;
  cacheRead: NanoUsd;
  cacheWrite: NanoUsd;
}

/** Prices as operators write them: USD per 1M tokens, as decimal strings. */
export interface ModelPricesPerMillion {
  input: string;
  output: string;
  cacheRead?: string;
  cacheWrite?: string;
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
  return {
    input,
    output: perTokenPrice(prices.output),
    // Vendors without a cache price bill cached input like any input.
    cacheRead: prices.cacheRead === undefined ? input : perTokenPrice(prices.cacheRead),
    cacheWrite: prices.cacheWrite === undefined ? input : perTokenPrice(prices.cacheWrite),
  };
}

/** The exact cost of a usage, in nano-USD. Reasoning tokens are part of output and priced as output. */
export function costOfUsage(usage: CanonicalUsage, prices: ModelPrices): NanoUsd {
  return (
    BigInt(usage.inputTokens) * prices.input +
    BigInt(usage.cacheReadTokens) * prices.cacheRead +
    BigInt(usage.cacheWriteTokens) * prices.cacheWrite +
    BigInt(usage.outputTokens) * prices.output
  );
}
