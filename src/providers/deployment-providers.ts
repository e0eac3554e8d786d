import { FAMILY_VENDOR } from '../catalog/models.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import { ADAPTER_FACTORIES, KEYLESS_CREDENTIAL } from './create-providers.js';
import { CredentialPool, pooledCredential, type DeploymentLoad, type PooledCredential } from './credential-pool.js';
import { FailoverProvider, type ClosableAdapter } from './failover-provider.js';
import { deploymentsKey, type DeploymentProviders, type RegisteredProvider } from './registry.js';
import { UpstreamHttp } from './upstream-http.js';
import type { DeploymentConfig } from './upstream-settings.js';
import type { DeploymentCircuit, DeploymentHealth } from '../observability/gateway-metrics.js';

/** A deployment's credentials, built once and shared by every model that names it, so its health is one. */
interface BuiltDeployment {
  /** The settings it was built from (JSON), to keep it, with its health, across reloads that leave it alone. */
  signature: string;
  name: string;
  /** Its upstream requests in flight on this instance, shared by its credentials. */
  load: DeploymentLoad;
  credentials: PooledCredential<ClosableAdapter>[];
}

/**
 * The providers of the operator's named deployments: one per distinct list of deployments a model names, each a
 * FailoverProvider over the listed deployments' credentials, weighted by the deployment's `weight` (split evenly
 * between its credentials). The credentials of a deployment are shared by all its lists, so a deployment cools
 * down once for every model it serves. A rebuild (reloaded configuration) keeps the deployments whose settings
 * did not change, with their health and statistics.
 */
export class DeploymentBuilder {
  private built = new Map<string, BuiltDeployment>();
  private providers = new Map<string, RegisteredProvider>();

  constructor(
    private readonly streamStartWindowMs: number,
    private readonly metrics: GatewayMetrics = NO_METRICS,
    private readonly now?: () => number,
  ) {}

  /**
   * Providers for each list of deployments in `lists`, from `deployments`; throws naming the entry when a list
   * names an unknown deployment or mixes families. Nothing is kept until `commit`.
   */
  build(
    deployments: Readonly<Record<string, DeploymentConfig>>,
    lists: ReadonlyArray<{ owner: string; family: string; deployments: readonly string[] }>,
  ): { providers: DeploymentProviders; commit: () => void } {
    const built = new Map<string, BuiltDeployment>();
    const buildOne = (name: string): BuiltDeployment => {
      const existing = built.get(name);
      if (existing !== undefined) return existing;
      const settings = deployments[name]!;
      const signature = JSON.stringify(settings);
      const previous = this.built.get(name);
      const deployment =
        previous !== undefined && previous.signature === signature ? previous : buildDeployment(settings, signature);
      built.set(name, deployment);
      return deployment;
    };
    const providers = new Map<string, RegisteredProvider>();
    for (const list of lists) {
      for (const name of list.deployments) {
        const settings = deployments[name];
        if (settings === undefined) throw new Error(`${list.owner}.deployments: '${name}' is not a deployment`);
        if (settings.family !== list.family)
          throw new Error(
            `${list.owner}.deployments: '${name}' serves the ${settings.family} family, not ${list.family}`,
          );
      }
      const key = deploymentsKey(list.deployments);
      if (providers.has(key)) continue;
      const credentials = list.deployments.flatMap((name) => buildOne(name).credentials);
      const reusable = this.providers.get(key);
      const unchanged =
        reusable !== undefined && list.deployments.every((name) => this.built.get(name) === built.get(name));
      providers.set(key, unchanged ? reusable : this.provider(deployments[list.deployments[0]!]!, credentials));
    }
    return {
      providers,
      commit: () => {
        const dropped = [...this.built.values()].filter((deployment) => ![...built.values()].includes(deployment));
        this.built = built;
        this.providers = providers;
        // Requests that picked a dropped deployment may still be streaming: its connections close later.
        if (dropped.length > 0) setTimeout(() => void closeAll(dropped), DROPPED_DEPLOYMENT_GRACE_MS).unref();
      },
    };
  }

  /**
   * Each deployment's live state for `/metrics`: its requests in flight, and its circuit: closed while any of its
   * credentials is, else half open while any may be probed, else open.
   */
  health(now: number): DeploymentHealth[] {
    return [...this.built.values()].map((deployment) => ({
      deployment: deployment.name,
      inFlight: deployment.load.inFlight,
      state: circuitOf(deployment.credentials, now),
    }));
  }

  /** Closes every deployment's connections (shutdown). */
  async close(): Promise<void> {
    await closeAll([...this.built.values()]);
  }

  private provider(first: DeploymentConfig, credentials: PooledCredential<ClosableAdapter>[]): FailoverProvider {
    const vendor = FAMILY_VENDOR[first.family];
    const pool = new CredentialPool(vendor, credentials, first.circuitBreaker, this.metrics);
    return new FailoverProvider({
      pool,
      retries: first.retries,
      streamStartWindowMs: this.streamStartWindowMs,
      metrics: this.metrics,
      ...(this.now === undefined ? {} : { now: this.now }),
    });
  }
}

/** How long a dropped deployment's connections stay open for the requests still using them. */
const DROPPED_DEPLOYMENT_GRACE_MS = 15 * 60_000;

async function closeAll(deployments: readonly BuiltDeployment[]): Promise<void> {
  await Promise.all(
    deployments.flatMap((deployment) => deployment.credentials.map((credential) => credential.target.close())),
  );
}

function circuitOf(credentials: readonly PooledCredential<ClosableAdapter>[], now: number): DeploymentCircuit {
  if (credentials.some((credential) => credential.coolingUntil === 0)) return 'closed';
  return credentials.some((credential) => credential.coolingUntil <= now) ? 'half_open' : 'open';
}

function buildDeployment(settings: DeploymentConfig, signature: string): BuiltDeployment {
  const load: DeploymentLoad = { inFlight: 0, maxConcurrent: settings.maxConcurrent };
  const vendor = FAMILY_VENDOR[settings.family];
  const http = new UpstreamHttp({ baseUrl: settings.baseUrl }, { timeouts: settings.timeouts });
  const pools = new Map<string, UpstreamHttp>([[settings.baseUrl, http]]);
  const share = settings.weight / settings.credentials.length;
  const credentials = settings.credentials.map((credential, index) => {
    let pool = pools.get(credential.baseUrl);
    if (pool === undefined) {
      pool = new UpstreamHttp({ baseUrl: credential.baseUrl }, { timeouts: settings.timeouts });
      pools.set(credential.baseUrl, pool);
    }
    const adapter = ADAPTER_FACTORIES[vendor]({
      baseUrl: credential.baseUrl,
      apiKey: credential.apiKey ?? KEYLESS_CREDENTIAL,
      http: pool,
    });
    const label = `${settings.name}/${credential.label}`;
    return pooledCredential(label, credential.baseUrl, adapter, `${label}#${index}`, {
      weight: share,
      deployment: settings.name,
      load,
      ...(settings.rpm === undefined
        ? {}
        : { rpm: Math.max(1, Math.floor(settings.rpm / settings.credentials.length)) }),
    });
  });
  return { signature, name: settings.name, load, credentials };
}
