import { GatewayError } from '../canonical/errors.js';
import type { VendorName } from '../canonical/request.js';
import type { ProviderAdapter } from './types.js';

/** The adapters this gateway serves, by vendor. */
export class ProviderRegistry {
  constructor(
    private readonly adapters: Partial<Record<VendorName, ProviderAdapter & { close?: () => Promise<void> }>>,
    private readonly unavailableReasons: Partial<Record<VendorName, string>> = {},
  ) {}

  get(vendor: VendorName): ProviderAdapter {
    const adapter = this.adapters[vendor];
    if (adapter === undefined) {
      throw new GatewayError('upstream_unavailable', this.unavailableReasons[vendor] ?? `No provider is configured for ${vendor}.`);
    }
    return adapter;
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.adapters).map((adapter) => adapter?.close?.()));
  }
}
