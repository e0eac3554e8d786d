import type { ModelPricesPerMillion } from '../billing/prices.js';
import type { VendorName } from '../canonical/request.js';

export type ModelFamily = 'alpha' | 'beta' | 'gamma' | 'delta';

/** Which vendor wire protocol serves each family. */
export const FAMILY_VENDOR: Readonly<Record<ModelFamily, VendorName>> = {
  alpha: 'anthropic',
  beta: 'openai',
  gamma: 'gemini',
  delta: 'deepseek',
};

/** The vendor name that replaces the family word in the default upstream model id. */
const FAMILY_UPSTREAM_WORD: Readonly<Record<ModelFamily, string>> = {
  alpha: 'claude',
  beta: 'gpt',
  gamma: 'gemini',
  delta: 'deepseek',
};

export interface CatalogModelDefinition {
  id: string;
  family: ModelFamily;
  description: string;
  /** The vendor's model id when it is not the family word replaced by the vendor's name. */
  upstreamModel?: string;
  /**
   * Anthropic's minimum cacheable prompt length for the model (its prompt-caching docs: 1,024 tokens for Opus 4.8
   * and the Sonnets, 4,096 for Haiku 4.5); shorter prompts are not cached, so the gateway places no breakpoints.
   */
  minCacheablePromptTokens?: number;
  /**
   * beta models: the vendor's model that answers a request with a web search. Chat Completions searches the web
   * only on dedicated search models (`gpt-5-search-api`), so such a request goes there instead of `upstreamModel`.
   */
  webSearchUpstreamModel?: string;
  /** Largest output the model may produce in one reply. */
  maxOutputTokens: number;
  contextWindow: number;
  /**
   * USD per 1M tokens. The specification lists alpha-sonnet-5, beta-5.4, gamma-2.5-pro and delta-v4-flash; the
   * others are the documented defaults of the billing issue. Cache prices follow each vendor's published ratio
   * (Anthropic: read 10%, 5-minute write 125%, 1-hour write 200% of input; OpenAI: cached input 10% on the 5.x
   * models, 25% on o3 and o4-mini; DeepSeek: cache hits 10% on v4, 25% on r1; Gemini implicit caching: 25% on 2.5,
   * 10% on newer models, no storage charge). OpenAI, Gemini and DeepSeek charge no premium to write a cache, so
   * they have no write price: their writes are billed as input, whatever the lifetime.
   */
  prices: ModelPricesPerMillion;
}

/** Anthropic's server-tool prices: web search $10 per 1,000 searches; web fetch costs only its tokens. */
const ANTHROPIC_TOOLS = { webSearchRequestNano: '10000000', webFetchRequestNano: '0' } as const;

/**
 * OpenAI's Chat Completions search model and its price: $10 per 1,000 calls, one call per request that searched,
 * however many queries the model ran.
 */
const OPENAI_WEB_SEARCH = { model: 'gpt-5-search-api', prices: { webSearchRequestNano: '10000000' } } as const;

/** The eleven public model ids the service offers, in its four families. */
export const MODEL_DEFINITIONS: readonly CatalogModelDefinition[] = [
  {
    id: 'alpha-opus-4-8',
    family: 'alpha',
    minCacheablePromptTokens: 1_024,
    description: 'most capable, for complex tasks',
    maxOutputTokens: 32_000,
    contextWindow: 200_000,
    prices: { input: '5', output: '25', cacheRead: '0.50', cacheWrite: '6.25', cacheWrite1h: '10', ...ANTHROPIC_TOOLS },
  },
  {
    id: 'alpha-sonnet-5',
    family: 'alpha',
    minCacheablePromptTokens: 1_024,
    description: 'balance of intelligence and speed',
    maxOutputTokens: 64_000,
    contextWindow: 200_000,
    prices: { input: '3', output: '15', cacheRead: '0.30', cacheWrite: '3.75', cacheWrite1h: '6', ...ANTHROPIC_TOOLS },
  },
  {
    id: 'alpha-haiku-4-5',
    family: 'alpha',
    minCacheablePromptTokens: 4_096,
    description: 'fast and cheap',
    maxOutputTokens: 64_000,
    contextWindow: 200_000,
    prices: { input: '1', output: '5', cacheRead: '0.10', cacheWrite: '1.25', cacheWrite1h: '2', ...ANTHROPIC_TOOLS },
  },
  {
    id: 'beta-5.5',
    family: 'beta',
    description: 'latest flagship',
    maxOutputTokens: 128_000,
    contextWindow: 400_000,
    webSearchUpstreamModel: OPENAI_WEB_SEARCH.model,
    prices: { input: '5', output: '30', cacheRead: '0.50', ...OPENAI_WEB_SEARCH.prices },
  },
  {
    id: 'beta-5.4',
    family: 'beta',
    description: 'stable and reliable',
    maxOutputTokens: 128_000,
    contextWindow: 400_000,
    webSearchUpstreamModel: OPENAI_WEB_SEARCH.model,
    prices: { input: '2.50', output: '15', cacheRead: '0.25', ...OPENAI_WEB_SEARCH.prices },
  },
  {
    id: 'o3',
    family: 'beta',
    description: 'advanced reasoning',
    upstreamModel: 'o3',
    maxOutputTokens: 100_000,
    contextWindow: 200_000,
    webSearchUpstreamModel: OPENAI_WEB_SEARCH.model,
    prices: { input: '2', output: '8', cacheRead: '0.50', ...OPENAI_WEB_SEARCH.prices },
  },
  {
    id: 'o4-mini',
    family: 'beta',
    description: 'lightweight reasoning',
    upstreamModel: 'o4-mini',
    maxOutputTokens: 100_000,
    contextWindow: 200_000,
    webSearchUpstreamModel: OPENAI_WEB_SEARCH.model,
    prices: { input: '1.10', output: '4.40', cacheRead: '0.275', ...OPENAI_WEB_SEARCH.prices },
  },
  {
    id: 'gamma-2.5-pro',
    family: 'gamma',
    description: 'strongest of its family',
    maxOutputTokens: 65_536,
    contextWindow: 1_048_576,
    // Google Search grounding: $35 per 1,000 grounded prompts on Gemini 2.5.
    prices: { input: '1', output: '10', cacheRead: '0.25', webSearchRequestNano: '35000000' },
  },
  {
    id: 'gamma-3.5-flash',
    family: 'gamma',
    description: 'fast and affordable',
    maxOutputTokens: 65_536,
    contextWindow: 1_048_576,
    // Google Search grounding: $14 per 1,000 search queries on Gemini 3 and later.
    prices: { input: '0.30', output: '2.50', cacheRead: '0.03', webSearchRequestNano: '14000000' },
  },
  {
    id: 'delta-v4-flash',
    family: 'delta',
    description: 'extremely cheap',
    maxOutputTokens: 8_192,
    contextWindow: 128_000,
    prices: { input: '0.14', output: '0.28', cacheRead: '0.014' },
  },
  {
    id: 'delta-r1',
    family: 'delta',
    description: 'open-source reasoning model',
    upstreamModel: 'deepseek-reasoner',
    maxOutputTokens: 32_768,
    contextWindow: 128_000,
    prices: { input: '0.55', output: '2.19', cacheRead: '0.14' },
  },
];

/** `alpha-sonnet-5` → `claude-sonnet-5`: the family word replaced by the vendor's name. */
export function defaultUpstreamModel(definition: CatalogModelDefinition): string {
  if (definition.upstreamModel !== undefined) return definition.upstreamModel;
  return FAMILY_UPSTREAM_WORD[definition.family] + definition.id.slice(definition.family.length);
}
