/**
 * What a request costs by its vendor's own bill: the usage object the vendor (here the simulator) reported, priced
 * from the catalog's list prices with each vendor's cache rules, computed here apart from the gateway's billing
 * code so a test can hold that code to it.
 *
 * - Anthropic: `input_tokens` is the uncached rest; cache reads cost 0.1×, 5-minute writes 1.25× and 1-hour
 *   writes 2× the input price.
 * - OpenAI and DeepSeek: `prompt_tokens` includes the cached part, billed at the catalog's cached-input price.
 * - Gemini: `promptTokenCount` includes `cachedContentTokenCount`, billed at the catalog's cached price; thoughts
 *   are output.
 */
import { parseUsd } from '../../src/billing/money.js';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';

/** The prompt side of one vendor usage, split as every protocol reports it. */
export interface PromptSplit {
  /** Every prompt token: uncached, read and written. */
  total: number;
  read: number;
  write5m: number;
  write1h: number;
}

export interface VendorBill extends PromptSplit {
  output: number;
  costNano: bigint;
}

/** Nano-USD per token of a "USD per 1M tokens" list price; exact for every catalog price. */
function perToken(usdPerMillion: string): bigint {
  const perMillion = parseUsd(usdPerMillion);
  if (perMillion % 1_000_000n !== 0n) throw new RangeError(`$${usdPerMillion}/1M is not whole nano-USD per token`);
  return perMillion / 1_000_000n;
}

function catalogPrices(model: string): { input: bigint; output: bigint; cacheRead: bigint | undefined } {
  const definition = MODEL_DEFINITIONS.find((candidate) => candidate.id === model);
  if (definition === undefined) throw new Error(`no catalog model ${model}`);
  const { input, output, cacheRead } = definition.prices;
  return {
    input: perToken(input),
    output: perToken(output),
    cacheRead: cacheRead === undefined ? undefined : perToken(cacheRead),
  };
}

/** `price × numerator / denominator`, refused unless whole: every price stays exact. */
function exactRatio(price: bigint, numerator: bigint, denominator: bigint): bigint {
  if ((price * numerator) % denominator !== 0n)
    throw new RangeError(`${price}×${numerator}/${denominator} is not whole`);
  return (price * numerator) / denominator;
}

type Json = Record<string, unknown>;

function count(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

/** Anthropic `usage` (whole reply, or a stream's message_start merged with message_delta). */
export function anthropicBill(model: string, usage: Json): VendorBill {
  const prices = catalogPrices(model);
  const creation = (usage.cache_creation ?? {}) as Json;
  const write5m = count(creation.ephemeral_5m_input_tokens);
  const write1h = count(creation.ephemeral_1h_input_tokens);
  const written = count(usage.cache_creation_input_tokens);
  // A vendor that reports writes without their split would leave their price undecidable.
  if (write5m + write1h !== written)
    throw new Error(`cache_creation split ${write5m}+${write1h} does not add up to ${written}`);
  const uncached = count(usage.input_tokens);
  const read = count(usage.cache_read_input_tokens);
  const output = count(usage.output_tokens);
  const readPrice = exactRatio(prices.input, 1n, 10n);
  const write5mPrice = exactRatio(prices.input, 5n, 4n);
  const write1hPrice = prices.input * 2n;
  const costNano =
    BigInt(uncached) * prices.input +
    BigInt(read) * readPrice +
    BigInt(write5m) * write5mPrice +
    BigInt(write1h) * write1hPrice +
    BigInt(output) * prices.output;
  return { total: uncached + read + written, read, write5m, write1h, output, costNano };
}

/** OpenAI Chat Completions (and DeepSeek) `usage`. */
export function openaiBill(model: string, usage: Json): VendorBill {
  const prices = catalogPrices(model);
  const total = count(usage.prompt_tokens);
  const read = count((usage.prompt_tokens_details as Json | undefined)?.cached_tokens);
  const output = count(usage.completion_tokens);
  const costNano =
    BigInt(total - read) * prices.input +
    BigInt(read) * (prices.cacheRead ?? prices.input) +
    BigInt(output) * prices.output;
  return { total, read, write5m: 0, write1h: 0, output, costNano };
}

/** Gemini `usageMetadata`. */
export function geminiBill(model: string, usage: Json): VendorBill {
  const prices = catalogPrices(model);
  const total = count(usage.promptTokenCount);
  const read = count(usage.cachedContentTokenCount);
  const output = count(usage.candidatesTokenCount) + count(usage.thoughtsTokenCount);
  const costNano =
    BigInt(total - read) * prices.input +
    BigInt(read) * (prices.cacheRead ?? prices.input) +
    BigInt(output) * prices.output;
  return { total, read, write5m: 0, write1h: 0, output, costNano };
}

/** The bill of one stored usage record's raw vendor usage, by the family of its model. */
export function vendorBill(model: string, rawUsage: string | null): VendorBill {
  if (rawUsage === null) throw new Error(`no vendor usage recorded for a ${model} request`);
  const usage = JSON.parse(rawUsage) as Json;
  if (model.startsWith('alpha-')) return anthropicBill(model, usage);
  if (model.startsWith('gamma-')) return geminiBill(model, usage);
  return openaiBill(model, usage);
}
