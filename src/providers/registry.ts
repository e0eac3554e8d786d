import { GatewayError } from '../canonical/errors.js';
import type { VendorName } from '../canonical/request.js';
import type { CredentialStatus } from './credential-pool.js';
import type { ProviderAdapter } from './types.js';

/** What the registry needs of a vendor's provider beyond the adapter interface. */
export type RegisteredProvider = ProviderAdapter & {
  close?: () => Promise<void>;
  credentialStatus?: (now: number) => CredentialStatus[];
};

/** The adapters this gateway serves, by vendor. */
export class ProviderRegistry {
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

  /**
   * Every upstream credential and its circuit-breaker state, for the operator view (GET /api/admin/upstreams).
   * Keys are never included.
   */
  credentialStatus(): CredentialStatus[] {
    const now = this.now();
    return Object.values(this.adapters).flatMap((adapter) => adapter?.credentialStatus?.(now) ?? []);
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.adapters).map((adapter) => adapter?.close?.()));
  }
}
