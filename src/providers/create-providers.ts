import type { VendorName } from '../canonical/request.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import { AnthropicProvider } from './anthropic/anthropic-provider.js';
import { CredentialPool, pooledCredential } from './credential-pool.js';
import { DeepSeekProvider } from './deepseek/deepseek-provider.js';
import { FailoverProvider, type ClosableAdapter } from './failover-provider.js';
import { GeminiProvider } from './gemini/gemini-provider.js';
import { OpenAIProvider } from './openai/openai-provider.js';
import { ProviderRegistry } from './registry.js';
import { UpstreamHttp } from './upstream-http.js';
import type { VendorConfig } from './upstream-settings.js';

interface VendorEndpoint {
  baseUrl: string;
  apiKey: string;
  http: UpstreamHttp;
}

export const ADAPTER_FACTORIES: Readonly<Record<VendorName, (endpoint: VendorEndpoint) => ClosableAdapter>> = {
  anthropic: (endpoint) => new AnthropicProvider(endpoint),
  openai: (endpoint) => new OpenAIProvider(endpoint),
  gemini: (endpoint) => new GeminiProvider(endpoint),
  deepseek: (endpoint) => new DeepSeekProvider(endpoint),
};

/** A placeholder credential for simulators and keyless loopback upstreams, which accept any bearer token. */
export const KEYLESS_CREDENTIAL = 'tollgate-no-key';

export interface CreateProvidersOptions {
  metrics?: GatewayMetrics;
  now?: () => number;
}

/** What the providers read of the gateway's configuration (config/load-config.ts fills it). */
export interface ProvidersConfig {
  demoMode: boolean;
  vendors: Readonly<Record<VendorName, VendorConfig>>;
  /** Interval of keep-alive comments on a silent stream: a stream's first token may be retried within it. */
  streamKeepAliveMs: number;
}

/**
 * One adapter per vendor, over its pool of credentials (see FailoverProvider). In demo mode every vendor points
 * at the in-process simulator with one keyless credential; otherwise a vendor is served when the operator
 * configured it (keys, or a base URL such as a loopback simulator).
 */
export function createProviders(
  config: ProvidersConfig,
  simulatorBaseUrls?: Readonly<Record<VendorName, string>>,
  options: CreateProvidersOptions = {},
): ProviderRegistry {
  const metrics = options.metrics ?? NO_METRICS;
  const providers: Partial<Record<VendorName, FailoverProvider>> = {};
  const reasons: Partial<Record<VendorName, string>> = {};
  for (const vendor of Object.keys(config.vendors) as VendorName[]) {
    const settings = config.vendors[vendor];
    if (config.demoMode && simulatorBaseUrls !== undefined) {
      const demo: VendorConfig = {
        ...settings,
        credentials: [{ apiKey: KEYLESS_CREDENTIAL, baseUrl: simulatorBaseUrls[vendor], label: 'simulator' }],
      };
      providers[vendor] = vendorProvider(vendor, demo, config.streamKeepAliveMs, metrics, options.now);
    } else if (settings.configured) {
      providers[vendor] = vendorProvider(vendor, settings, config.streamKeepAliveMs, metrics, options.now);
    } else {
      reasons[vendor] =
        `The ${vendor} provider is not configured on this gateway (the operator sets ${vendor.toUpperCase()}_API_KEY).`;
    }
  }
  return new ProviderRegistry(providers, reasons, options.now);
}

function vendorProvider(
  vendor: VendorName,
  settings: VendorConfig,
  streamStartWindowMs: number,
  metrics: GatewayMetrics,
  now: (() => number) | undefined,
): FailoverProvider {
  // Credentials at the same base URL share one connection pool.
  const pools = new Map<string, UpstreamHttp>();
  const labels = new Set<string>();
  const credentials = settings.credentials.map((credential, index) => {
    let http = pools.get(credential.baseUrl);
    if (http === undefined) {
      http = new UpstreamHttp({ baseUrl: credential.baseUrl }, { timeouts: settings.timeouts });
      pools.set(credential.baseUrl, http);
    }
    const adapter = ADAPTER_FACTORIES[vendor]({
      baseUrl: credential.baseUrl,
      apiKey: credential.apiKey ?? KEYLESS_CREDENTIAL,
      http,
    });
    // Two credentials with one label still need their own rendezvous seeds.
    const seedName = labels.has(credential.label) ? `${credential.label}#${index}` : credential.label;
    labels.add(credential.label);
    return pooledCredential(credential.label, credential.baseUrl, adapter, seedName);
  });
  const pool = new CredentialPool(vendor, credentials, settings.circuitBreaker, metrics);
  return new FailoverProvider({
    pool,
    retries: settings.retries,
    // A stream has one keep-alive interval to produce its first token while it can still be retried.
    streamStartWindowMs,
    metrics,
    ...(now === undefined ? {} : { now }),
  });
}
