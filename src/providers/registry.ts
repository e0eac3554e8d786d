import { GatewayError } from '../canonical/errors.js';
import type { VendorName } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { CredentialStatus } from './credential-pool.js';
import type { ProviderAdapter } from './types.js';

/** What the registry needs of a vendor's provider beyond the adapter interface. */
export type RegisteredProvider = ProviderAdapter & {
  close?: () => Promise<void>;
  credentialStatus?: (now: number) => CredentialStatus[];
};

/** The providers of the operator's named deployments, by the list of deployments a model names (`a,b`). */
export type DeploymentProviders = ReadonlyMap<string, RegisteredProvider>;

/** The key a model's deployments are found under. */
export function deploymentsKey(deployments: readonly string[]): string {
  return deployments.join(',');
}

/** The adapters this gateway serves, by vendor, and by the operator's named deployments. */
export class ProviderRegistry {
  private deployments: DeploymentProviders = new Map();
  private closeDeployments: () => Promise<void> = async () => {};

  constructor(
    private readonly adapters: Partial<Record<VendorName, RegisteredProvider>>,
    private readonly unavailableReasons: Partial<Record<VendorName, string>> = {},
    private readonly now: () => number = Date.now,
  ) {}

  get(vendor: VendorName): ProviderAdapter {
    const adapter = this.adapters[vendor];
    if (adapter === undefined) {
      throw new GatewayError(
        'upstream_unavailable',
        this.unavailableReasons[vendor] ?? `No provider is configured for ${vendor}.`,
      );
    }
    return adapter;
  }

  /** The provider that serves `model`: its named deployments when it has some, else its family's vendor. */
  forModel(model: Pick<CatalogModel, 'vendor' | 'deployments'>): ProviderAdapter {
    if (model.deployments === undefined) return this.get(model.vendor);
    const provider = this.deployments.get(deploymentsKey(model.deployments));
    if (provider === undefined)
      throw new GatewayError(
        'upstream_unavailable',
        `No provider serves the deployments ${model.deployments.join(', ')}.`,
      );
    return provider;
  }

  /** This registry with other deployments: a reloaded configuration's chains are checked against it before it applies. */
  withDeployments(next: DeploymentProviders): ProviderRegistry {
    const preview = new ProviderRegistry(this.adapters, this.unavailableReasons, this.now);
    preview.deployments = next;
    return preview;
  }

  /** Whether a provider for these deployments is already running (a reload keeps it, with its health). */
  deploymentProvider(key: string): RegisteredProvider | undefined {
    return this.deployments.get(key);
  }

  /**
   * Swaps in the providers of a reloaded configuration; `close` closes every deployment's connections (at
   * shutdown). The builder closes deployments a reload dropped itself, after a grace period.
   */
  replaceDeployments(next: DeploymentProviders, close: () => Promise<void>): void {
    this.deployments = next;
    this.closeDeployments = close;
  }

  /**
   * Every upstream credential and its circuit-breaker state, for the operator view (GET /api/admin/upstreams).
   * Keys are never included.
   */
  credentialStatus(): CredentialStatus[] {
    const now = this.now();
    const rows = [...Object.values(this.adapters), ...this.deployments.values()].flatMap(
      (adapter) => adapter?.credentialStatus?.(now) ?? [],
    );
    // A deployment shared by several models' lists is in each of their pools: shown once.
    const seen = new Set<string>();
    return rows.filter((row) => {
      const key = `${row.vendor} ${row.label}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  async close(): Promise<void> {
    await Promise.all([...Object.values(this.adapters).map((adapter) => adapter?.close?.()), this.closeDeployments()]);
  }
}
