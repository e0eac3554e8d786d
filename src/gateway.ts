import { pino, type Logger } from 'pino';
import { AccountService } from './accounts/account-service.js';
import { buildApp, LOG_REDACTIONS } from './app.js';
import { ModelCatalog } from './catalog/model-catalog.js';
import type { Config } from './config/load-config.js';
import { KeyService } from './keys/key-service.js';
import { ChatPipeline } from './pipeline/chat-pipeline.js';
import { createProviders } from './providers/create-providers.js';
import type { ProviderRegistry } from './providers/registry.js';
import { startSimulator } from './simulator/simulator-server.js';
import { openStorage } from './storage/open-storage.js';
import type { Storage } from './storage/types.js';

export interface GatewayOptions {
  /** Injected clock (tests). */
  now?: () => number;
  /** PostgreSQL schema to keep tables in (tests isolate themselves this way). */
  postgresSchema?: string;
  /** Override the logger (tests pass a silent one). */
  logger?: Logger;
}

export interface RunningGateway {
  /** `http://host:port` the gateway listens on. */
  url: string;
  config: Config;
  storage: Storage;
  accounts: AccountService;
  keys: KeyService;
  /** The in-process simulator's URL in demo mode. */
  simulatorUrl: string | undefined;
  close(): Promise<void>;
}

/** Opens storage (migrating it), starts the demo simulator when needed, and listens. */
export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<RunningGateway> {
  const now = options.now ?? Date.now;
  const storage = await openStorage(config.databaseUrl, options.postgresSchema === undefined ? {} : { postgresSchema: options.postgresSchema });
  let simulator: Awaited<ReturnType<typeof startSimulator>> | undefined;
  let providers: ProviderRegistry | undefined;
  try {
    await storage.migrate();
    if (config.demoMode) simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    providers = createProviders(config, simulator?.baseUrls);
    const catalog = new ModelCatalog(config.models);
    const keys = new KeyService(storage.apiKeys, now);
    const accounts = new AccountService(storage.accounts, now);
    const logger = options.logger ?? pino({ level: config.logLevel, redact: LOG_REDACTIONS });
    const pipeline = new ChatPipeline({
      catalog,
      providers,
      usage: storage.usage,
      now,
      onSettlementError: (error, requestId) => logger.error({ err: error, requestId }, 'usage settlement failed'),
    });
    const app = buildApp({ catalog, keys, pipeline, bodyLimitBytes: config.bodyLimitBytes, logger, now });
    const address = await app.listen({ port: config.port, host: config.host });
    const openProviders = providers;
    const openSimulator = simulator;
    return {
      url: address,
      config,
      storage,
      accounts,
      keys,
      simulatorUrl: simulator?.url,
      async close() {
        await app.close();
        await openProviders.close();
        await openSimulator?.close();
        await storage.close();
      },
    };
  } catch (error) {
    await providers?.close();
    await simulator?.close();
    await storage.close();
    throw error;
  }
}
