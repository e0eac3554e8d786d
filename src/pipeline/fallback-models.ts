import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import { modelAllowed } from '../keys/key-permissions.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { outputOptionsSupported } from '../providers/output-options.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { classifyAttemptFailure } from '../providers/upstream-retry.js';

/**
 * The operator's fallback models (`models.<id>.fallback`): resolved once, at start-up, so a typo fails there and not
 * on the first outage; taken only for a failure of the vendor itself, and only where the fallback may serve the request.
 */
export class FallbackModels {
  private readonly byModel = new Map<string, CatalogModel>();

  constructor(
    private readonly catalog: ModelCatalog,
    private readonly providers: ProviderRegistry,
    fallbacks: Readonly<Record<string, string | undefined>> = {},
  ) {
    for (const [id, fallbackId] of Object.entries(fallbacks)) {
      if (fallbackId !== undefined) this.byModel.set(id, this.resolve(id, fallbackId));
    }
  }

  /**
   * The model that answers instead after `error` failed `model`, if any: a key's allowlist binds the operator's
   * fallback too, and a fallback that cannot give the choices or log probabilities asked for is not taken.
   */
  after(
    error: unknown,
    model: CatalogModel,
    request: CanonicalRequest,
    auth: AuthenticatedKey,
    signal: AbortSignal,
  ): CatalogModel | undefined {
    const fallback = this.byModel.get(model.id);
    if (
      fallback === undefined ||
      !modelAllowed(auth.key.permissions, fallback) ||
      !outputOptionsSupported(request, fallback) ||
      signal.aborted ||
      !isVendorOutage(error)
    )
      return undefined;
    return fallback;
  }

  /** A configured fallback, checked: a known model, not the model itself, whose vendor is served. */
  private resolve(id: string, fallbackId: string): CatalogModel {
    try {
      const model = this.catalog.resolve(id);
      const fallback = this.catalog.resolve(fallbackId);
      if (fallback.id === model.id) throw new Error('it names the model itself');
      this.providers.get(fallback.vendor);
      return fallback;
    } catch (error) {
      throw new Error(`models.${id}.fallback (${fallbackId}) cannot be used: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}

/** A failure of the vendor itself (not of the request): what a fallback model may answer instead. */
function isVendorOutage(error: unknown): boolean {
  return error instanceof GatewayError && classifyAttemptFailure(error, false).blamesCredential;
}
