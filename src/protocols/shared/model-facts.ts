import { formatUsd, type NanoUsd } from '../../billing/money.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';

/*
 * What a model costs and can do, as every model listing shows it (OpenAI's, Anthropic's and Google's shapes, and the
 * dashboard's Models page): prices per million tokens as exact decimal strings, derived from the catalog's integer
 * nano-USD per token, never from a float.
 */

/** USD per 1M tokens, exact decimal strings (`"0.30"` is `"0.3"`). */
export interface ModelPricing {
  input: string;
  output: string;
  /** A prompt token read from the vendor's cache. */
  cache_read: string;
  /** A prompt token written to the cache for 5 minutes (vendors without a write premium: the input price). */
  cache_write: string;
  /** A prompt token written to the cache for 1 hour. */
  cache_write_1h: string;
  /** USD per web search the vendor runs, where the model can search and it is charged. */
  web_search_per_request?: string;
}

export interface ModelCapabilityFlags {
  /** Function (tool) calling. */
  tools: boolean;
  /** Images in the prompt. */
  images: boolean;
  /** Thinks before answering (reasoning tokens, billed as output). */
  reasoning: boolean;
  /** Replies constrained to a JSON schema (`response_format: json_schema`); false where only JSON mode exists. */
  structured_output: boolean;
}

const NANO_PER_MILLION_TOKENS = 1_000_000n;

function perMillion(perToken: NanoUsd): string {
  return formatUsd(perToken * NANO_PER_MILLION_TOKENS);
}

export function pricingOf(model: CatalogModel): ModelPricing {
  const { prices } = model;
  return {
    input: perMillion(prices.input),
    output: perMillion(prices.output),
    cache_read: perMillion(prices.cacheRead),
    cache_write: perMillion(prices.cacheWrite),
    cache_write_1h: perMillion(prices.cacheWrite1h),
    ...(prices.webSearchRequest === undefined || prices.webSearchRequest === 0n
      ? {}
      : { web_search_per_request: formatUsd(prices.webSearchRequest) }),
  };
}

/**
 * By family, from what each vendor adapter serves: DeepSeek refuses images with a 400 and has JSON mode only (a
 * `json_schema` request is served as JSON mode and reported as dropped); every family reasons (DeepSeek's newer
 * models take a thinking switch, the reasoner always thinks).
 */
export function capabilitiesOf(model: CatalogModel): ModelCapabilityFlags {
  const deepseek = model.vendor === 'deepseek';
  // An operator's `capabilities` list narrows what the model is asked for (the pipeline refuses the rest), so the
  // listing says the same.
  const listed = model.capabilities;
  return {
    tools: listed === undefined ? true : listed.includes('tools'),
    images: !deepseek && (listed === undefined || listed.includes('vision')),
    reasoning: true,
    structured_output: !deepseek,
  };
}

/** "$1.10 in / $4.40 out per 1M tokens": the prices in a sentence, for shapes with only free text (Google's). */
export function describePricing(pricing: ModelPricing): string {
  return `$${cents(pricing.input)} in / $${cents(pricing.output)} out per 1M tokens`;
}

/** At least two decimals, exact: "1.1" → "1.10", "0.014" → "0.014". */
function cents(usd: string): string {
  const [whole, fraction = ''] = usd.split('.');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}
