import type { VendorName } from '../canonical/request.js';
import type { Config } from '../config/load-config.js';
import { AnthropicProvider } from './anthropic/anthropic-provider.js';
import { GeminiProvider } from './gemini/gemini-provider.js';
import { DeepSeekProvider } from './deepseek/deepseek-provider.js';
import { OpenAIProvider } from './openai/openai-provider.js';
import { ProviderRegistry } from './registry.js';
import type { ProviderAdapter } from './types.js';

type Closable = ProviderAdapter & { close(): Promise<void> };

interface VendorEndpoint {
  baseUrl: string;
  apiKey: string;
}

const ADAPTER_FACTORIES: Readonly<Record<VendorName, (endpoint: VendorEndpoint) => Closable>> = {
  anthropic: (endpoint) => new AnthropicProvider(endpoint),
  openai: (endpoint) => new OpenAIProvider(endpoint),
  gemini: (endpoint) => new GeminiProvider(endpoint),
  deepseek: (endpoint) => new DeepSeekProvider(endpoint),
};

/** A placeholder credential for simulators and keyless loopback upstreams, which accept any bearer token. */
const KEYLESS_CREDENTIAL = 'tollgate-no-key';

/**
 * One adapter per vendor. In demo mode every vendor points at the in-process simulator; otherwise a vendor is
 * served when the operator configured it (a key, or a base URL such as a loopback simulator).
 */
export function createProviders(config: Config, simulatorBaseUrls?: Readonly<Record<VendorName, string>>): ProviderRegistry {
  const adapters: Partial<Record<VendorName, Closable>> = {};
  const reasons: Partial<Record<VendorName, string>> = {};
  for (const vendor of Object.keys(config.vendors) as VendorName[]) {
    const settings = config.vendors[vendor];
    const factory = ADAPTER_FACTORIES[vendor];
    if (config.demoMode && simulatorBaseUrls !== undefined) {
      adapters[vendor] = factory({ baseUrl: simulatorBaseUrls[vendor], apiKey: KEYLESS_CREDENTIAL });
    } else if (settings.configured) {
      adapters[vendor] = factory({ baseUrl: settings.baseUrl, apiKey: settings.apiKey ?? KEYLESS_CREDENTIAL });
    } else {
      reasons[vendor] = `The ${vendor} provider is not configured on this gateway (the operator sets ${vendor.toUpperCase()}_API_KEY).`;
    }
  }
  return new ProviderRegistry(adapters, reasons);
}
