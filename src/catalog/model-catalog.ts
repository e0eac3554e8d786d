import type { VendorName } from '../canonical/request.js';
import { pricesFromPerMillion, type ModelPrices, type ModelPricesPerMillion } from '../billing/prices.js';
import { GatewayError } from '../canonical/errors.js';
import {
  FAMILY_VENDOR,
  MODEL_DEFINITIONS,
  defaultUpstreamModel,
  type CatalogModelDefinition,
  type ModelFamily,
} from './models.js';

export interface CatalogModel {
  id: string;
  family: ModelFamily;
  vendor: VendorName;
  upstreamModel: string;
  /** The vendor's model that answers requests with a web search, where it is another (beta: a search model). */
  webSearchUpstreamModel?: string;
  /**
   * A request that searches is billed as one search, however many queries it ran: a search model's call (beta), and
   * Google Search grounding on Gemini 2.x ("per grounded prompt"); Gemini 3 bills each query.
   */
  webSearchBilledPerRequest?: true;
  description: string;
  maxOutputTokens: number;
  contextWindow: number;
  /** Per-token prices in nano-USD. */
  prices: ModelPrices;
  /**
   * Output tokens a hold grows by at a time (docs/architecture.md#holds-that-grow); billing's `outputSliceOf` gives
   * the default when unset.
   */
  outputSliceTokens?: number;
  /**
   * The shortest prompt the vendor caches (Anthropic's per-model minimum); set only where the gateway places
   * breakpoints itself (docs/prompt-caching.md).
   */
  minCacheablePromptTokens?: number;
  /** The gateway places breakpoints for clients that could not (on by default; `models.<id>.automaticCaching`). */
  automaticCaching: boolean;
}

export interface ModelOverride {
  upstreamModel?: string;
  webSearchUpstreamModel?: string;
  maxOutputTokens?: number;
  /** The longest prompt served: lower than the vendor's to match a deployment, or for clients that must compact. */
  contextWindow?: number;
  outputSliceTokens?: number;
  automaticCaching?: boolean;
  /** USD per 1M tokens, replacing the listed price field by field. */
  prices?: Partial<ModelPricesPerMillion>;
}

/** Public model ids → how to reach them. Built once at start from the definitions and the config's overrides. */
export class ModelCatalog {
  private readonly byId: ReadonlyMap<string, CatalogModel>;
  readonly models: readonly CatalogModel[];

  constructor(overrides: Readonly<Record<string, ModelOverride>> = {}) {
    const unknown = Object.keys(overrides).filter((id) => !MODEL_DEFINITIONS.some((d) => d.id === id));
    if (unknown.length > 0) {
      throw new Error(`Model overrides name unknown model ids: ${unknown.join(', ')}`);
    }
    this.models = MODEL_DEFINITIONS.map((definition) => buildModel(definition, overrides[definition.id]));
    this.byId = new Map(this.models.map((model) => [model.id, model]));
  }

  find(id: string): CatalogModel | undefined {
    return this.byId.get(id);
  }

  /** The catalog entry for a client's `model` value, or a 400 naming the bad value and the valid ids. */
  resolve(id: unknown): CatalogModel {
    if (typeof id !== 'string' || id.length === 0) {
      throw new GatewayError('unknown_model', `The 'model' field is required. Valid models: ${this.validIds()}.`, {
        param: 'model',
      });
    }
    const model = this.byId.get(id);
    if (model === undefined) {
      throw new GatewayError('unknown_model', `The model '${id}' does not exist. Valid models: ${this.validIds()}.`, {
        param: 'model',
      });
    }
    return model;
  }

  private validIds(): string {
    return this.models.map((model) => model.id).join(', ');
  }
}

function buildModel(definition: CatalogModelDefinition, override: ModelOverride | undefined): CatalogModel {
  const upstreamModel = override?.upstreamModel ?? defaultUpstreamModel(definition);
  return {
    id: definition.id,
    family: definition.family,
    vendor: FAMILY_VENDOR[definition.family],
    upstreamModel,
    ...webSearchUpstreamModelOf(definition, override, upstreamModel),
    description: definition.description,
    maxOutputTokens: override?.maxOutputTokens ?? definition.maxOutputTokens,
    contextWindow: override?.contextWindow ?? definition.contextWindow,
    prices: pricesFromPerMillion({ ...definition.prices, ...override?.prices }),
    ...(override?.outputSliceTokens === undefined ? {} : { outputSliceTokens: override.outputSliceTokens }),
    ...(definition.minCacheablePromptTokens === undefined
      ? {}
      : { minCacheablePromptTokens: definition.minCacheablePromptTokens }),
    automaticCaching: override?.automaticCaching ?? true,
  };
}

function webSearchUpstreamModelOf(
  definition: CatalogModelDefinition,
  override: ModelOverride | undefined,
  upstreamModel: string,
): Pick<CatalogModel, 'webSearchUpstreamModel' | 'webSearchBilledPerRequest'> {
  const model = override?.webSearchUpstreamModel ?? definition.webSearchUpstreamModel;
  if (model !== undefined) return { webSearchUpstreamModel: model, webSearchBilledPerRequest: true };
  return definition.family === 'gamma' && /^gemini-2[.-]/.test(upstreamModel)
    ? { webSearchBilledPerRequest: true }
    : {};
}
