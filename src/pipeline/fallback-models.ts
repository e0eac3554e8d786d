import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import type { PricedModel } from '../billing/priced-model.js';
import type { ModelPrices } from '../billing/prices.js';
import { assertKeyMayUseModel, keyMayUseModel } from '../keys/key-permissions.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { outputOptionsSupported } from '../providers/output-options.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { classifyAttemptFailure } from '../providers/upstream-retry.js';
import { modelAccepts } from './model-capabilities.js';

/**
 * The operator's fallback chains (`models.<id>.fallbacks`, `aliases.<name>.fallbacks`, and the older single
 * `models.<id>.fallback`): resolved when the configuration is loaded, so a typo or a cycle fails there and not on
 * the first outage. A chain is taken one model at a time, each its own upstream call, and only for a failure of
 * the vendor itself (connection, timeout, 429, 5xx) before anything reached the client.
 */
export class FallbackModels {
  private readonly byName = new Map<string, readonly CatalogModel[]>();
  private readonly catalog: ModelCatalog;
  private readonly providers: ProviderRegistry;

  /** `chains`: a public model id or alias → the public names tried after it, in order. */
  constructor(
    catalog: ModelCatalog,
    providers: ProviderRegistry,
    chains: Readonly<Record<string, readonly string[] | undefined>> = {},
  ) {
    this.catalog = catalog;
    this.providers = providers;
    for (const [name, chain] of Object.entries(chains)) {
      if (chain !== undefined && chain.length > 0) this.byName.set(name, resolveChain(catalog, providers, name, chain));
    }
  }

  /**
   * The models tried after `model` when a client named it `requestedName`: the alias's own chain, else the model's.
   * A model the key may not use, or that cannot give the choices or log probabilities asked for, is left out: a
   * key's allowlist and its project's bind every model of the chain.
   */
  chainFor(
    requestedName: string,
    model: CatalogModel,
    request: CanonicalRequest,
    auth: AuthenticatedKey,
  ): CatalogModel[] {
    if (request.fallbackModels !== undefined) return this.clientChain(model, request, auth);
    const chain = this.byName.get(requestedName) ?? this.byName.get(model.id) ?? [];
    return chain.filter(
      (candidate) =>
        keyMayUseModel(auth, candidate) &&
        outputOptionsSupported(request, candidate) &&
        modelAccepts(request, candidate),
    );
  }

  private clientChain(model: CatalogModel, request: CanonicalRequest, auth: AuthenticatedKey): CatalogModel[] {
    return clientChainOf(this.catalog, this.providers, model, request, auth);
  }
}

/**
 * The client's own chain (`models`): each a model or alias that is served, or a 400 naming it; a model the key may
 * not use is its 403, as `model` would be. Repeats and the request's own model are left out.
 */
function clientChainOf(
  catalog: ModelCatalog,
  providers: ProviderRegistry,
  model: CatalogModel,
  request: CanonicalRequest,
  auth: AuthenticatedKey,
): CatalogModel[] {
  const seen = new Set<string>([model.id]);
  const chain: CatalogModel[] = [];
  for (const name of request.fallbackModels ?? []) {
    const candidate = catalog.lookup(name);
    if (candidate === undefined)
      throw new GatewayError('unknown_model', `The model '${name}' in 'models' does not exist or is retired.`, {
        param: 'models',
      });
    assertKeyMayUseModel(auth, candidate);
    if (seen.has(candidate.id)) continue;
    seen.add(candidate.id);
    try {
      providers.forModel(candidate);
    } catch {
      continue; // A vendor this gateway does not serve is not a fallback it can take.
    }
    if (outputOptionsSupported(request, candidate) && modelAccepts(request, candidate)) chain.push(candidate);
  }
  return chain;
}

/** A chain, checked: known models that are served, none twice, none leading back to the chain's own model. */
function resolveChain(
  catalog: ModelCatalog,
  providers: ProviderRegistry,
  name: string,
  chain: readonly string[],
): CatalogModel[] {
  const owner = catalog.aliasTarget(name) === undefined ? `models.${name}.fallbacks` : `aliases.${name}.fallbacks`;
  const head = catalog.lookup(name);
  if (head === undefined) throw new Error(`${owner}: '${name}' is not a model or alias that is served`);
  const seen = new Set<string>([head.id]);
  return chain.map((entry) => {
    const model = catalog.lookup(entry);
    if (model === undefined) throw new Error(`${owner}: '${entry}' is not a model or alias that is served`);
    if (seen.has(model.id))
      throw new Error(
        model.id === head.id
          ? `${owner}: '${entry}' leads back to '${head.id}' (a cycle)`
          : `${owner}: '${entry}' is listed twice (a cycle)`,
      );
    seen.add(model.id);
    try {
      providers.forModel(model);
    } catch (error) {
      throw new Error(`${owner}: '${entry}' cannot be used: ${(error as Error).message}`, { cause: error });
    }
    return model;
  });
}

/** A failure of the vendor itself (not of the request): what the next model of a chain may answer instead. */
export function isVendorOutage(error: unknown): boolean {
  return error instanceof GatewayError && classifyAttemptFailure(error, false).blamesCredential;
}

/**
 * What a request whose chain may be served by any of `models` is held for: each price and limit at its highest,
 * so whichever model answers, the hold covers it (each settles at its own model's price).
 */
export function costliestOf(models: readonly CatalogModel[]): PricedModel {
  const [first, ...rest] = models as [CatalogModel, ...CatalogModel[]];
  if (rest.length === 0) return first;
  const max = (pick: (prices: ModelPrices) => bigint | undefined) =>
    models.reduce<bigint | undefined>((best, model) => {
      const value = pick(model.prices);
      return value === undefined ? best : best === undefined || value > best ? value : best;
    }, undefined);
  const prices: ModelPrices = {
    input: max((p) => p.input)!,
    output: max((p) => p.output)!,
    cacheRead: max((p) => p.cacheRead)!,
    cacheWrite: max((p) => p.cacheWrite)!,
    cacheWrite1h: max((p) => p.cacheWrite1h)!,
  };
  const webSearchRequest = max((p) => p.webSearchRequest);
  const webFetchRequest = max((p) => p.webFetchRequest);
  return {
    ...first,
    maxOutputTokens: Math.max(...models.map((model) => model.maxOutputTokens)),
    prices: {
      ...prices,
      ...(webSearchRequest === undefined ? {} : { webSearchRequest }),
      ...(webFetchRequest === undefined ? {} : { webFetchRequest }),
    },
  };
}
