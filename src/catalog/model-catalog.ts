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

/** What a model the operator lists may be asked for: image input, function tools, vendor-run tools. */
export const MODEL_CAPABILITIES = ['vision', 'tools', 'webSearch'] as const;
export type ModelCapability = (typeof MODEL_CAPABILITIES)[number];

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
  /** The operator's named deployments that serve the model, in order; absent: the family's vendor. */
  deployments?: readonly string[];
  /** The operator's list of what the model accepts; absent: not restricted by the gateway. */
  capabilities?: readonly ModelCapability[];
  /** Set when the operator retired the model: new requests are refused, naming the replacement if any. */
  retired?: { replacement?: string };
}

export interface ModelOverride {
  /** Required for a model the gateway does not list: which vendor protocol serves it. */
  family?: ModelFamily;
  description?: string;
  upstreamModel?: string;
  webSearchUpstreamModel?: string;
  maxOutputTokens?: number;
  /** The longest prompt served: lower than the vendor's to match a deployment, or for clients that must compact. */
  contextWindow?: number;
  outputSliceTokens?: number;
  automaticCaching?: boolean;
  /** Anthropic's minimum cacheable prompt (alpha models the operator adds). */
  minCacheablePromptTokens?: number;
  /** USD per 1M tokens, replacing the listed price field by field (a model the gateway does not list gives all). */
  prices?: Partial<ModelPricesPerMillion>;
  /** Named deployments (`deployments.<name>`) that serve it; default: the family's vendor (`vendors.<vendor>`). */
  deployments?: readonly string[];
  /** What the model accepts (a request needing more is refused with a 400); absent: unrestricted. */
  capabilities?: readonly ModelCapability[];
  /** New requests are refused with a 400 naming `replacement`; usage history and pricing keep the model. */
  retired?: boolean;
  replacement?: string;
}

/** What the operator's configuration says of the catalog; every part optional (the eleven models stand alone). */
export interface CatalogSettings {
  models?: Readonly<Record<string, ModelOverride>>;
  /** Public name → the public model id it serves. */
  aliases?: Readonly<Record<string, string>>;
}

interface CatalogState {
  byId: ReadonlyMap<string, CatalogModel>;
  /** The models new requests may name (retired ones left out). */
  models: readonly CatalogModel[];
  aliases: ReadonlyMap<string, string>;
}

/**
 * Public model ids → how to reach them: the eleven definitions, with the operator's overrides, additions,
 * retirements and aliases. `update` swaps the whole state at once (a reloaded configuration), so a request sees
 * either the old catalog or the new one, never a mix; everything holds this one object.
 */
export class ModelCatalog {
  private state: CatalogState;

  constructor(overrides: Readonly<Record<string, ModelOverride>> = {}, aliases: Readonly<Record<string, string>> = {}) {
    this.state = buildState({ models: overrides, aliases });
  }

  /** Takes over another (already validated) catalog's models and aliases: a reloaded configuration, all at once. */
  adopt(other: ModelCatalog): void {
    this.state = other.state;
  }

  get models(): readonly CatalogModel[] {
    return this.state.models;
  }

  /** Every model, retired ones included (the operator's view). */
  get allModels(): readonly CatalogModel[] {
    return [...this.state.byId.values()];
  }

  /** Every alias and the model id it serves. */
  get aliases(): ReadonlyMap<string, string> {
    return this.state.aliases;
  }

  /** A model by id, retired ones included (usage history is priced and named with them); no aliases. */
  find(id: string): CatalogModel | undefined {
    return this.state.byId.get(id);
  }

  /** A public name as a client sends it: a model id or an alias; undefined when unknown or retired. */
  lookup(name: string): CatalogModel | undefined {
    const model = this.state.byId.get(this.state.aliases.get(name) ?? name);
    return model === undefined || model.retired !== undefined ? undefined : model;
  }

  /** The public model id an alias points to, if `name` is one. */
  aliasTarget(name: string): string | undefined {
    return this.state.aliases.get(name);
  }

  /** The catalog entry for a client's `model` value, or a 400 naming the bad value and the valid ids. */
  resolve(id: unknown): CatalogModel {
    if (typeof id !== 'string' || id.length === 0) {
      throw new GatewayError('unknown_model', `The 'model' field is required. Valid models: ${this.validIds()}.`, {
        param: 'model',
      });
    }
    const model = this.state.byId.get(this.state.aliases.get(id) ?? id);
    if (model === undefined) {
      throw new GatewayError('unknown_model', `The model '${id}' does not exist. Valid models: ${this.validIds()}.`, {
        param: 'model',
      });
    }
    if (model.retired !== undefined) {
      const instead = model.retired.replacement === undefined ? '' : ` Use '${model.retired.replacement}' instead.`;
      throw new GatewayError('unknown_model', `The model '${model.id}' has been retired.${instead}`, {
        param: 'model',
      });
    }
    return model;
  }

  private validIds(): string {
    return this.state.models.map((model) => model.id).join(', ');
  }
}

function buildState(settings: CatalogSettings): CatalogState {
  const overrides = settings.models ?? {};
  const listed = new Set(MODEL_DEFINITIONS.map((definition) => definition.id));
  const built: CatalogModel[] = MODEL_DEFINITIONS.map((definition) =>
    withOperatorFields(buildModel(definition, overrides[definition.id]), overrides[definition.id]),
  );
  for (const [id, override] of Object.entries(overrides)) {
    if (!listed.has(id)) built.push(withOperatorFields(buildModel(addedDefinition(id, override), override), override));
  }
  const byId = new Map(built.map((model) => [model.id, model]));
  const aliases = new Map(Object.entries(settings.aliases ?? {}));
  for (const model of built) {
    const replacement = model.retired?.replacement;
    if (replacement !== undefined) {
      const target = byId.get(aliases.get(replacement) ?? replacement);
      if (target === undefined || target.retired !== undefined)
        throw new Error(`models.${model.id}.replacement: '${replacement}' is not a model that is served`);
    }
  }
  for (const [alias, target] of aliases) {
    if (byId.has(alias)) throw new Error(`aliases.${alias}: shadows the model '${alias}'; choose another name`);
    const model = byId.get(target);
    if (model === undefined) throw new Error(`aliases.${alias}: '${target}' is not a model id`);
    if (model.retired !== undefined) throw new Error(`aliases.${alias}: '${target}' is retired`);
  }
  return { byId, models: built.filter((model) => model.retired === undefined), aliases };
}

/** A model the gateway does not list, from the operator's entry: each required field checked by name. */
function addedDefinition(id: string, override: ModelOverride): CatalogModelDefinition {
  const missing = (field: string) => new Error(`models.${id}.${field}: required for a model the gateway does not list`);
  if (override.family === undefined) throw missing('family');
  if (!(override.family in FAMILY_VENDOR)) throw new Error(`models.${id}.family: unknown family '${override.family}'`);
  if (override.prices?.input === undefined) throw missing('prices.input');
  if (override.prices.output === undefined) throw missing('prices.output');
  if (override.contextWindow === undefined) throw missing('contextWindow');
  if (override.maxOutputTokens === undefined) throw missing('maxOutputTokens');
  return {
    id,
    family: override.family,
    description: override.description ?? 'configured by the operator',
    upstreamModel: override.upstreamModel ?? id,
    maxOutputTokens: override.maxOutputTokens,
    contextWindow: override.contextWindow,
    ...(override.minCacheablePromptTokens === undefined
      ? {}
      : { minCacheablePromptTokens: override.minCacheablePromptTokens }),
    prices: { ...override.prices, input: override.prices.input, output: override.prices.output },
  };
}

/** Deployments and retirement: what only the operator's entry says. */
function withOperatorFields(model: CatalogModel, override: ModelOverride | undefined): CatalogModel {
  if (override === undefined) return model;
  if (override.family !== undefined && override.family !== model.family)
    throw new Error(`models.${model.id}.family: the model is '${model.family}'; a listed model's family cannot change`);
  return {
    ...model,
    ...(override.description === undefined ? {} : { description: override.description }),
    ...(override.capabilities === undefined ? {} : { capabilities: override.capabilities }),
    ...(override.deployments === undefined || override.deployments.length === 0
      ? {}
      : { deployments: override.deployments }),
    ...(override.retired === true
      ? { retired: override.replacement === undefined ? {} : { replacement: override.replacement } }
      : {}),
  };
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
    prices: pricesOf(definition, override),
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

/** The per-token prices, or an error naming the price field that is not an exact decimal price. */
function pricesOf(definition: CatalogModelDefinition, override: ModelOverride | undefined): ModelPrices {
  const merged: ModelPricesPerMillion = { ...definition.prices };
  for (const [field, value] of Object.entries(override?.prices ?? {}))
    if (value !== undefined) (merged as unknown as Record<string, string>)[field] = value;
  try {
    return pricesFromPerMillion(merged);
  } catch (error) {
    throw new Error(`models.${definition.id}.prices: ${(error as Error).message}`, { cause: error });
  }
}
