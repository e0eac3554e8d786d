import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { failSafeLogDestination } from './observability/fail-safe-output.js';
import { AccountService } from './accounts/account-service.js';
import { buildApp } from './app.js';
import { LOG_OPTIONS } from './observability/log-options.js';
import { BillingService } from './billing/billing-service.js';
import { startJournalReplay, type JournalReplay } from './billing/journal-replay.js';
import { startReservationSweeper } from './billing/reservation-sweeper.js';
import { startTierPeriodSweeper } from './billing/tier-period-sweeper.js';
import { TierUpgrades } from './billing/tier-upgrades.js';
import { SettlementJournal } from './billing/settlement-journal.js';
import { startUsageRetention } from './billing/usage-retention.js';
import { ModelCatalog } from './catalog/model-catalog.js';
import { InputCalibration, seedCalibration } from './billing/input-calibration.js';
import { watchCatalog } from './catalog-runtime.js';
import { LiveCatalog } from './catalog-live.js';
import { DeploymentBuilder } from './providers/deployment-providers.js';
import { ConfigError, loadConfig, type Config } from './config/load-config.js';
import { drainAndClose, ShutdownState } from './http/graceful-shutdown.js';
import type { ReadinessCheck } from './http/health.js';
import { OutageLog } from './observability/outage-log.js';
import { PrometheusMetrics } from './observability/prometheus-metrics.js';
import type { DeploymentHealth } from './observability/gateway-metrics.js';
import { createSmtpMailer } from './identity/mailer.js';
import { DEFAULT_ALERT_SETTINGS, startAlerts, type RunningAlerts } from './alerts/start-alerts.js';
import { createDashboardDependencies } from './http/dashboard/create-dashboard-dependencies.js';
import { KeyService } from './keys/key-service.js';
import { ChatPipeline } from './pipeline/chat-pipeline.js';
import { rateLimitSubject, tokensLimited } from './http/rate-limit-hook.js';
import { createRateLimiter, limiterFailures } from './ratelimit/create-rate-limiter.js';
import type { RateLimiter } from './ratelimit/rate-limiter.js';
import { createProviders } from './providers/create-providers.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { RunningSimulator } from './simulator/simulator-server.js';
import { openStorage } from './storage/open-storage.js';
import { AuditLog } from './accounts/audit/audit-log.js';
import { ProjectService } from './accounts/project-service.js';
import { StoredResponses } from './protocols/openai-responses/stored-responses.js';
import type { Storage } from './storage/types.js';
import type { Telemetry } from './telemetry/telemetry.js';
import { TelemetrySettingsError, telemetrySettings } from './telemetry/telemetry-settings.js';
import { startUsageExport } from './telemetry/usage-export/start-usage-export.js';

export interface GatewayOptions {
  /** Injected clock (tests). */
  now?: () => number;
  /** PostgreSQL schema to keep tables in (tests isolate themselves this way). */
  postgresSchema?: string;
  /** Override the logger (tests pass a silent one). */
  logger?: Logger;
  /** Re-reads the configuration when its file changes (default: loadConfig from the process's environment). */
  reloadConfig?: () => Config;
}

export interface RunningGateway {
  /** `http://host:port` the gateway listens on. */
  url: string;
  config: Config;
  storage: Storage;
  accounts: AccountService;
  keys: KeyService;
  billing: BillingService;
  /** The in-process simulator's URL in demo mode. */
  simulatorUrl: string | undefined;
  /** What `/metrics` exports. */
  metrics: PrometheusMetrics;
  /**
   * Graceful close: stop accepting, let in-flight requests and streams finish for up to `graceMs` (default
   * SHUTDOWN_GRACE_MS), cut the rest with an error (each still settles), then close pools and storage.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** The PEM files named by TLS_CERT_FILE / TLS_KEY_FILE, read once at start-up. */
function readTlsFiles(files: { certFile: string; keyFile: string }): { cert: Buffer; key: Buffer } {
  const read = (path: string, setting: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new ConfigError(`${setting} names ${path}, which cannot be read: ${(error as Error).message}`);
    }
  };
  return { cert: read(files.certFile, 'TLS_CERT_FILE'), key: read(files.keyFile, 'TLS_KEY_FILE') };
}

/** Opens storage (migrating it), starts the demo simulator when needed, and listens. */
export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<RunningGateway> {
  const now = options.now ?? Date.now;
  const tls = config.tls === undefined ? undefined : readTlsFiles(config.tls);
  // Logging must never take the process down: a log reader gone away (EPIPE) drops lines, nothing more.
  const logger = options.logger ?? pino({ level: config.logLevel, ...LOG_OPTIONS }, failSafeLogDestination());
  // Outages of the database and Redis are logged once per interval with counts, not once per request.
  const outages = new OutageLog(logger);
  const storage = await openStorage(config.databaseUrl, {
    owner: true,
    ...(options.postgresSchema === undefined ? {} : { postgresSchema: options.postgresSchema }),
    onBackgroundError: (error) => outages.record('storage', 'background work failed', error),
  });
  let simulator: RunningSimulator | undefined;
  let providers: ProviderRegistry | undefined;
  let limiter: RateLimiter | undefined;
  let journal: SettlementJournal | undefined;
  let replay: JournalReplay | undefined;
  let telemetry: Telemetry | undefined;
  try {
    await storage.migrate();
    if (config.demoMode) {
      // Loaded only in demo mode: a gateway in front of real vendors never pays for the simulator's memory.
      const { startSimulator } = await import('./simulator/simulator-server.js');
      simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    }
    const shutdown = new ShutdownState();
    let liveLimiter: RateLimiter | undefined;
    const directory = config.settlementJournalDir;
    const settlementJournal = new SettlementJournal({
      directory,
      onError: (error, context) => logger.error({ err: error, directory }, `settlement journal: ${context}`),
      onUnavailable: (error, context) =>
        logger.error(
          { err: error, directory },
          `settlement journal: ${context} in ${directory} failed (${(error as Error).message}); paid requests are refused with 503 until a write succeeds (retried every second)`,
        ),
      onRecovered: () =>
        logger.warn({ directory }, 'settlement journal: writable again; paid requests are admitted again'),
      onAppended: () => outages.record('storage', 'settlements journaled'),
    });
    journal = settlementJournal;
    // A journal that cannot be written is found now, not during the first database outage, when it is needed.
    await settlementJournal.verifyUsable().catch((error: unknown) => {
      throw new ConfigError(
        `SETTLEMENT_JOURNAL_DIR ${directory} cannot hold the settlement journal: ${(error as Error).message}. Point SETTLEMENT_JOURNAL_DIR at a writable directory on a local disk.`,
      );
    });
    const metrics: PrometheusMetrics = new PrometheusMetrics({
      inFlightRequests: () => shutdown.inFlight,
      rateLimiterFailures: () => (liveLimiter === undefined ? 0 : limiterFailures(liveLimiter)),
      settlementJournal: () => settlementJournal.stats(),
      // Read at scrape time, once the deployments below are built.
      deployments: (): DeploymentHealth[] => deploymentBuilder.health(now()),
    });
    telemetry = await startTelemetryFromEnvironment(metrics, logger);
    providers = createProviders(config, simulator?.baseUrls, { metrics, now });
    const catalog = new ModelCatalog();
    const deploymentBuilder: DeploymentBuilder = new DeploymentBuilder(config.streamKeepAliveMs, metrics, now);
    const catalogTargets = { catalog, providers, deployments: deploymentBuilder };
    // Refused at start with the entry named (the process exits with the message), like any other setting.
    const liveCatalog = new LiveCatalog(config, catalogTargets, storage.catalog, process.env, logger, now);
    const preparedCatalog = await liveCatalog.prepareAtStart().catch((error: unknown) => {
      throw new ConfigError(`Invalid configuration: ${(error as Error).message}`);
    });
    preparedCatalog.commit();
    const keys = new KeyService(storage.apiKeys, now);
    const accounts = new AccountService(storage.accounts, now);
    // Prompt calibration as the latest settlements left it (one bounded read), then learned from this instance's own.
    const calibration = new InputCalibration();
    await seedCalibration(storage.usage, calibration);
    const billing = new BillingService(
      storage.billing,
      {
        freeTokensPerDay: config.freeTokensPerDay,
        reservationTtlMs: config.reservationTtlMs,
        checkpointIntervalMs: config.checkpointIntervalMs,
        pricesOf: (modelId) => catalog.find(modelId)?.prices,
        calibration,
      },
      now,
      settlementJournal,
    );
    const tierUpgrades = new TierUpgrades(storage.tierUpgrades, config.tiers, now);
    const mailer = config.mail === undefined ? undefined : createSmtpMailer(config.mail.smtpUrl, config.mail.from);
    // Started once the gateway listens; settlements before that are caught by its first evaluation.
    let alerts: RunningAlerts | undefined;
    const activeLimiter = await createRateLimiter({
      ...(config.redisUrl === undefined ? {} : { redisUrl: config.redisUrl }),
      failOpen: config.rateLimitFailOpen,
      now,
      onError: (error) =>
        outages.record(
          'redis',
          config.rateLimitFailOpen ? 'rate-limit checks failed (admitted: fail-open)' : 'rate-limit checks failed',
          error,
        ),
    });
    limiter = activeLimiter;
    liveLimiter = activeLimiter;
    const readiness: ReadinessCheck[] = [
      { name: 'storage', check: () => storage.ping() },
      {
        name: 'settlement_journal',
        failedState: 'not_writable',
        check: async () => {
          const unavailable = settlementJournal.unavailable();
          if (unavailable !== undefined) throw new Error(unavailable.reason, { cause: unavailable.error });
        },
      },
    ];
    // Fail-open, the gateway serves without Redis: `degraded`, still ready.
    if (activeLimiter.ping !== undefined)
      readiness.push({ name: 'redis', check: () => activeLimiter.ping!(), optional: config.rateLimitFailOpen });
    const pipeline = new ChatPipeline({
      catalog,
      providers,
      billing,
      now,
      metrics,
      keepAliveMs: config.streamKeepAliveMs,
      onSettlementError: (error, requestId) => logger.error({ err: error, requestId }, 'usage settlement failed'),
      onImplausibleUsage: (requestId, reason, vendorUsage) =>
        logger.warn({ requestId, reason, vendorUsage }, 'vendor usage implausible: settled on the local count'),
      onTokensUsed: (auth, tokens) => {
        // Settled: the organisation's alert rules are evaluated shortly, off this request's path.
        alerts?.nudge(auth.organisation.id);
        if (tokens > 0 && tokensLimited(auth, config.tiers)) {
          void activeLimiter.recordTokens(rateLimitSubject(auth.key.id), tokens);
        }
      },
    });
    pipeline.replaceFallbacks(preparedCatalog.fallbacks);
    liveCatalog.start(pipeline, config.catalogPollMs, config.redisUrl);
    const catalogWatch =
      config.configFile === undefined
        ? undefined
        : watchCatalog(
            config.configFile,
            options.reloadConfig ?? (() => loadConfig()),
            (reloaded) => liveCatalog.fileChanged(reloaded),
            logger,
          );
    const audit = new AuditLog(storage.audit, storage.organisations, now);
    const projects = new ProjectService(storage.projects, now);
    const app = buildApp({
      catalog,
      keys,
      projects,
      audit,
      pipeline,
      limiter: activeLimiter,
      tiers: config.tiers,
      billing: storage.billing,
      usage: storage.usage,
      usageExport: storage.usageExport,
      storedResponses: new StoredResponses({
        repository: storage.responses,
        retentionDays: config.responsesRetentionDays,
        now,
      }),
      dashboard: createDashboardDependencies({
        storage,
        accounts,
        keys,
        audit,

        catalog,
        config,
        now,
        providers,
        tierUpgrades,
        pricesOf: (modelId) => catalog.find(modelId)?.prices,
        catalogEditor: liveCatalog.editor,
        mailer,
        log: (message, details) => logger.warn(details, message),
        onAlertRuleChanged: (organisationId) => alerts?.ruleChanged(organisationId),
      }),
      trustProxy: config.trustProxy,
      metrics,
      metricsEndpoint: { source: metrics, token: config.metricsToken },
      ...(telemetry === undefined ? {} : { telemetry }),
      outages,
      readiness,
      shutdown,
      ...(tls === undefined ? {} : { tls }),
      requestTimeoutMs: config.requestTimeoutMs,
      headersTimeoutMs: config.headersTimeoutMs,
      maxHeaderBytes: config.maxHeaderBytes,
      freeTokensPerDay: config.freeTokensPerDay,
      bodyLimitBytes: config.bodyLimitBytes,
      logger,
      now,
    });
    // Settlements a previous run (or a stopped instance on the same directory) could not store go in first.
    const journalReplay = startJournalReplay(billing, settlementJournal, {
      logger,
      onSettled: (entry, result) => {
        if (!result.settled) return;
        const { usage } = entry;
        metrics.usageSettled(
          usage.model,
          {
            input: usage.inputTokens,
            output: usage.outputTokens,
            cacheRead: usage.cacheReadTokens,
            cacheWrite: usage.cacheWriteTokens,
          },
          result.chargedNano,
        );
        metrics.usageUnbilled(usage.model, result.unbilledTokens, result.unbilledNano);
      },
    });
    replay = journalReplay;
    await journalReplay.runNow();
    const address = await app.listen({ port: config.port, host: config.host });
    const sweeper = startReservationSweeper(billing, logger, config.sweepIntervalMs, metrics, outages);
    const tierPeriods = startTierPeriodSweeper(tierUpgrades, logger, config.sweepIntervalMs, outages);
    const retention = startUsageRetention(storage.usage, logger, { retentionDays: config.usageRetentionDays, now });
    const responsesRetention = startUsageRetention(storage.responses, logger, {
      retentionDays: config.responsesRetentionDays,
      now,
      what: 'stored responses',
    });
    // Settled usage to the operator's sinks, read from the store by a poller: never on a request's path.
    const usageExport = startUsageExport(config.usageExport, storage.usageExport, {
      registry: metrics.registry,
      log: logger,
      now,
    });
    // Budget alerts: rules evaluated by a timer and after settlements, deliveries sent from the persisted queue.
    alerts = startAlerts(
      {
        ...DEFAULT_ALERT_SETTINGS,
        evaluateIntervalMs: config.alertEvaluateIntervalMs,
        retry: { ...DEFAULT_ALERT_SETTINGS.retry, baseDelayMs: config.alertRetryBaseMs },
        allowHttpLoopback: config.usageExport.allowHttpLoopback,
      },
      {
        alerts: storage.alerts,
        limits: storage.spendLimits,
        organisations: storage.organisations,
        mailer,
        log: logger,
        now,
      },
    );
    const openAlerts = alerts;
    const openProviders = providers;
    const openSimulator = simulator;
    const openLimiter = activeLimiter;
    const openTelemetry = telemetry;
    return {
      url: address,
      config,
      storage,
      accounts,
      keys,
      billing,
      simulatorUrl: simulator?.url,
      metrics,
      async close(closeOptions = {}) {
        catalogWatch?.close();
        await liveCatalog.stop();
        sweeper.stop();
        tierPeriods.stop();
        retention.stop();
        responsesRetention.stop();
        await drainAndClose(app, shutdown, {
          graceMs: closeOptions.graceMs ?? config.shutdownGraceMs,
          log: (message, details) => logger.info(details, message),
        });
        // Every request's span has ended: what is queued goes to the collector (bounded: a dead one holds nothing).
        await openTelemetry?.shutdown();
        // What the store can take now goes in; the rest stays on disk for the next start (or another instance).
        await journalReplay.stop();
        await usageExport.close();
        await openAlerts.close();
        const waiting = settlementJournal.stats();
        if (waiting.pending + waiting.unwritten > 0) await journalReplay.runNow().catch(() => undefined);
        await settlementJournal.close();
        outages.stop();
        await openLimiter.close();
        await openProviders.close();
        mailer?.close();
        await openSimulator?.close();
        await storage.close();
      },
    };
  } catch (error) {
    await telemetry?.shutdown();
    outages.stop();
    await replay?.stop();
    await journal?.close();
    await limiter?.close();
    await providers?.close();
    await simulator?.close();
    await storage.close();
    throw error;
  }
}

/**
 * OpenTelemetry traces and GenAI metrics from the standard OTEL_* variables. The SDK is loaded only when an OTLP
 * endpoint is set: a gateway without one pays neither its memory nor any work per request.
 */
async function startTelemetryFromEnvironment(
  metrics: PrometheusMetrics,
  logger: Logger,
): Promise<Telemetry | undefined> {
  let settings: ReturnType<typeof telemetrySettings>;
  try {
    settings = telemetrySettings(process.env);
  } catch (error) {
    if (error instanceof TelemetrySettingsError) throw new ConfigError(error.message);
    throw error;
  }
  if (settings.traces === undefined && settings.metrics === undefined) return undefined;
  const { startTelemetry } = await import('./telemetry/telemetry.js');
  const telemetry = startTelemetry(settings, {
    metrics,
    onExportError: (error) =>
      logger.warn({ err: error }, 'OpenTelemetry export failed (spans dropped are counted in /metrics)'),
  });
  logger.info(
    { traces: settings.traces !== undefined, metrics: settings.metrics !== undefined },
    'OpenTelemetry export on',
  );
  return telemetry;
}
