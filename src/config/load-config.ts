import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { z } from 'zod';
import type { VendorName } from '../canonical/request.js';
import type { Tiers } from '../ratelimit/tiers.js';
import type { DeploymentConfig, VendorConfig } from '../providers/upstream-settings.js';
import { parseDatabaseUrl, type DatabaseTarget } from '../storage/database-url.js';
import { configSchema, DEFAULT_VENDOR_BASE_URLS, VENDOR_NAMES, type ParsedConfig } from './config-schema.js';
import { ssoSecretsFromEnvironment, type SsoProviderSettings } from './sso-settings.js';
import type { UsageExportSettings } from '../telemetry/usage-export/usage-export-settings.js';
import {
  USAGE_EXPORT_SETTING_NAMES,
  usageExportFromEnvironment,
  usageExportSettings,
} from './usage-export-settings.js';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** The settlement journal's directory (SETTLEMENT_JOURNAL_DIR, or `settlement-journal` under the data directory). */
  settlementJournalDir: string;
  logLevel: ParsedConfig['logLevel'];
  bodyLimitBytes: number;
  /** Every family served by the in-process simulator (no vendor configured, or forced). */
  demoMode: boolean;
  vendors: Readonly<Record<VendorName, VendorConfig>>;
  /** Interval of keep-alive comments on a silent stream. */
  streamKeepAliveMs: number;
  models: ParsedConfig['models'];
  /** Public name → the model it serves, and its own fallback chain if any. */
  aliases: Readonly<Record<string, AliasConfig>>;
  deployments: Readonly<Record<string, DeploymentConfig>>;
  /** Interval of each instance's read of the stored catalog's revision (CATALOG_POLL_MS). */
  catalogPollMs: number;
  /** The file the catalog was read from (watched for changes), if any. */
  configFile: string | undefined;
  redisUrl: string | undefined;
  rateLimitFailOpen: boolean;
  freeTokensPerDay: number;
  reservationTtlMs: number;
  sweepIntervalMs: number;
  /** Budget alerts: how often every rule is evaluated, and the first retry's delay of a failed delivery. */
  alertEvaluateIntervalMs: number;
  alertRetryBaseMs: number;
  /** Interval of the batched checkpoints of delivered output (and hold renewals) of each instance. */
  checkpointIntervalMs: number;
  /** 0 keeps per-request usage rows forever. */
  usageRetentionDays: number;
  responsesRetentionDays: number;
  /** SMTP_URL and MAIL_FROM, both set, or no mail is sent. */
  mail: { smtpUrl: string; from: string } | undefined;
  /** REQUIRE_VERIFIED_EMAIL, its default resolved (on with mail, off without). */
  requireVerifiedEmail: boolean;
  /** Dashboard registrations per client IP per 15 minutes; 0: no limit. */
  registrationsPerIp: number;
  tiers: Tiers;
  /** Both set, or Stripe top-ups are off. */
  stripe: { secretKey: string; webhookSecret: string } | undefined;
  publicBaseUrl: string | undefined;
  /** OpenID Connect providers offered on the dashboard's sign-in page. */
  ssoProviders: readonly SsoProviderSettings[];
  trustProxy: boolean | number | string;
  /** PEM certificate and key files: HTTPS served directly. */
  tls: { certFile: string; keyFile: string } | undefined;
  shutdownGraceMs: number;
  metricsToken: string | undefined;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  maxHeaderBytes: number;
  /** Usage export sinks (webhooks, NDJSON files) and how they run. */
  usageExport: UsageExportSettings;
}

export interface AliasConfig {
  model: string;
  fallbacks: readonly string[] | undefined;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Reads `tollgate.yaml` (or the file named by TOLLGATE_CONFIG) and the environment, validates the result and
 * returns a frozen Config. Every problem is reported at once, each with the setting's name.
 */
export function loadConfig(env: Environment = process.env, cwd = process.cwd()): Config {
  const fileValues = readConfigFile(env, cwd);
  const merged = { ...fileValues, ...environmentValues(env, fileValues) };
  const result = configSchema.safeParse(merged);
  if (!result.success) throw new ConfigError(formatIssues(result.error));
  return finalize(result.data, configFilePath(env, cwd));
}

/** The configuration file loadConfig reads, when there is one. */
export function configFilePath(env: Environment = process.env, cwd = process.cwd()): string | undefined {
  const path = env.TOLLGATE_CONFIG ?? `${cwd}/tollgate.yaml`;
  return existsSync(path) ? path : undefined;
}

function readConfigFile(env: Environment, cwd: string): Record<string, unknown> {
  const explicit = env.TOLLGATE_CONFIG;
  const path = explicit ?? `${cwd}/tollgate.yaml`;
  if (!existsSync(path)) {
    if (explicit !== undefined) throw new ConfigError(`TOLLGATE_CONFIG names ${explicit}, which does not exist.`);
    return {};
  }
  // Loaded only when there is a file to read (yaml is 72 modules, ~0.8 MB of heap; most deployments configure
  // through the environment). Synchronous like the rest of loadConfig; yaml's Node entry is CommonJS anyway.
  const { parse: parseYaml } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path} is not valid YAML: ${(error as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ConfigError(`${path} must hold a mapping of settings.`);
  return parsed as Record<string, unknown>;
}

function environmentValues(env: Environment, fileValues: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  if (env.PORT !== undefined) values.port = integerFrom('PORT', env.PORT);
  if (env.HOST !== undefined) values.host = env.HOST;
  if (env.DATABASE_URL !== undefined) values.databaseUrl = env.DATABASE_URL;
  if (env.SETTLEMENT_JOURNAL_DIR !== undefined && env.SETTLEMENT_JOURNAL_DIR !== '')
    values.settlementJournalDir = env.SETTLEMENT_JOURNAL_DIR;
  if (env.LOG_LEVEL !== undefined) values.logLevel = env.LOG_LEVEL;
  if (env.BODY_LIMIT_BYTES !== undefined) values.bodyLimitBytes = integerFrom('BODY_LIMIT_BYTES', env.BODY_LIMIT_BYTES);
  if (env.TOLLGATE_DEMO !== undefined) values.demo = booleanFrom('TOLLGATE_DEMO', env.TOLLGATE_DEMO);
  if (env.FREE_TOKENS_PER_DAY !== undefined)
    values.freeTokensPerDay = integerFrom('FREE_TOKENS_PER_DAY', env.FREE_TOKENS_PER_DAY);
  if (env.REDIS_URL !== undefined && env.REDIS_URL !== '') values.redisUrl = env.REDIS_URL;
  if (env.CATALOG_POLL_MS !== undefined) values.catalogPollMs = integerFrom('CATALOG_POLL_MS', env.CATALOG_POLL_MS);
  if (env.RATE_LIMIT_FAIL_OPEN !== undefined)
    values.rateLimitFailOpen = booleanFrom('RATE_LIMIT_FAIL_OPEN', env.RATE_LIMIT_FAIL_OPEN);
  if (env.RESERVATION_TTL_MS !== undefined)
    values.reservationTtlMs = integerFrom('RESERVATION_TTL_MS', env.RESERVATION_TTL_MS);
  if (env.SWEEP_INTERVAL_MS !== undefined)
    values.sweepIntervalMs = integerFrom('SWEEP_INTERVAL_MS', env.SWEEP_INTERVAL_MS);
  if (env.ALERT_EVALUATE_INTERVAL_MS !== undefined)
    values.alertEvaluateIntervalMs = integerFrom('ALERT_EVALUATE_INTERVAL_MS', env.ALERT_EVALUATE_INTERVAL_MS);
  if (env.ALERT_RETRY_BASE_MS !== undefined)
    values.alertRetryBaseMs = integerFrom('ALERT_RETRY_BASE_MS', env.ALERT_RETRY_BASE_MS);
  if (env.CHECKPOINT_INTERVAL_MS !== undefined)
    values.checkpointIntervalMs = integerFrom('CHECKPOINT_INTERVAL_MS', env.CHECKPOINT_INTERVAL_MS);
  if (env.TOLLGATE_SHORT_TIMERS !== undefined)
    values.shortTimersForTests = booleanFrom('TOLLGATE_SHORT_TIMERS', env.TOLLGATE_SHORT_TIMERS);
  if (env.USAGE_RETENTION_DAYS !== undefined)
    values.usageRetentionDays = integerFrom('USAGE_RETENTION_DAYS', env.USAGE_RETENTION_DAYS);
  if (env.RESPONSES_RETENTION_DAYS !== undefined)
    values.responsesRetentionDays = integerFrom('RESPONSES_RETENTION_DAYS', env.RESPONSES_RETENTION_DAYS);
  if (env.REGISTRATIONS_PER_IP !== undefined)
    values.registrationsPerIp = integerFrom('REGISTRATIONS_PER_IP', env.REGISTRATIONS_PER_IP);
  if (env.SMTP_URL !== undefined && env.SMTP_URL !== '') values.smtpUrl = env.SMTP_URL;
  if (env.MAIL_FROM !== undefined && env.MAIL_FROM !== '') values.mailFrom = env.MAIL_FROM;
  if (env.REQUIRE_VERIFIED_EMAIL !== undefined && env.REQUIRE_VERIFIED_EMAIL !== '')
    values.requireVerifiedEmail = booleanFrom('REQUIRE_VERIFIED_EMAIL', env.REQUIRE_VERIFIED_EMAIL);
  if (env.STRIPE_SECRET_KEY !== undefined && env.STRIPE_SECRET_KEY !== '')
    values.stripeSecretKey = env.STRIPE_SECRET_KEY;
  if (env.STRIPE_WEBHOOK_SECRET !== undefined && env.STRIPE_WEBHOOK_SECRET !== '')
    values.stripeWebhookSecret = env.STRIPE_WEBHOOK_SECRET;
  if (env.PUBLIC_BASE_URL !== undefined && env.PUBLIC_BASE_URL !== '') values.publicBaseUrl = env.PUBLIC_BASE_URL;
  if (env.TRUST_PROXY !== undefined && env.TRUST_PROXY !== '') values.trustProxy = trustProxyFrom(env.TRUST_PROXY);
  if (env.STREAM_KEEPALIVE_MS !== undefined)
    values.streamKeepAliveMs = integerFrom('STREAM_KEEPALIVE_MS', env.STREAM_KEEPALIVE_MS);
  if (env.TLS_CERT_FILE !== undefined && env.TLS_CERT_FILE !== '') values.tlsCertFile = env.TLS_CERT_FILE;
  if (env.TLS_KEY_FILE !== undefined && env.TLS_KEY_FILE !== '') values.tlsKeyFile = env.TLS_KEY_FILE;
  if (env.SHUTDOWN_GRACE_MS !== undefined)
    values.shutdownGraceMs = integerFrom('SHUTDOWN_GRACE_MS', env.SHUTDOWN_GRACE_MS);
  if (env.METRICS_TOKEN !== undefined && env.METRICS_TOKEN !== '') values.metricsToken = env.METRICS_TOKEN;
  if (env.REQUEST_TIMEOUT_MS !== undefined)
    values.requestTimeoutMs = integerFrom('REQUEST_TIMEOUT_MS', env.REQUEST_TIMEOUT_MS);
  if (env.HEADERS_TIMEOUT_MS !== undefined)
    values.headersTimeoutMs = integerFrom('HEADERS_TIMEOUT_MS', env.HEADERS_TIMEOUT_MS);
  if (env.MAX_HEADER_BYTES !== undefined) values.maxHeaderBytes = integerFrom('MAX_HEADER_BYTES', env.MAX_HEADER_BYTES);

  const fileVendors = (fileValues.vendors ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const vendors: Record<string, Record<string, unknown>> = {};
  for (const vendor of VENDOR_NAMES) {
    const prefix = vendor.toUpperCase();
    const fromEnv: Record<string, unknown> = {};
    const apiKey = env[`${prefix}_API_KEY`];
    const baseUrl = env[`${prefix}_BASE_URL`];
    if (apiKey !== undefined && apiKey !== '') fromEnv.apiKey = apiKey;
    if (baseUrl !== undefined && baseUrl !== '') fromEnv.baseUrl = baseUrl;
    // `<VENDOR>_API_KEYS=k1,k2`: several credentials at the vendor's base URL (replaces the file's list).
    const apiKeys = env[`${prefix}_API_KEYS`]
      ?.split(',')
      .map((key) => key.trim())
      .filter((key) => key !== '');
    if (apiKeys !== undefined && apiKeys.length > 0) fromEnv.credentials = apiKeys.map((key) => ({ apiKey: key }));
    vendors[vendor] = { ...(fileVendors[vendor] ?? {}), ...fromEnv };
  }
  values.vendors = { ...fileVendors, ...vendors };
  if (fileValues.ssoProviders !== undefined)
    values.ssoProviders = ssoSecretsFromEnvironment(fileValues.ssoProviders, env);
  Object.assign(values, usageExportFromEnvironment(env, fileValues));
  return values;
}

/**
 * `true`/`false`, a hop count, or addresses/CIDRs as fastify's `trustProxy` takes them. Digits are a hop count
 * (`1`: the proxy in front), not a boolean: `true` would also believe X-Forwarded-For entries the client wrote.
 */
function trustProxyFrom(raw: string): boolean | number | string {
  const value = raw.trim();
  if (/^(true|false|yes|no|on|off)$/i.test(value)) return booleanFrom('TRUST_PROXY', value);
  if (/^\d+$/.test(value)) return Number(value) === 0 ? false : Number(value);
  return value;
}

function integerFrom(name: string, raw: string): number | string {
  return /^\d+$/.test(raw.trim()) ? Number(raw) : `${name}=${raw}`;
}

function booleanFrom(name: string, raw: string): boolean | string {
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(value)) return false;
  return `${name}=${raw}`;
}

const SETTING_NAMES: Record<string, string> = {
  port: 'PORT',
  host: 'HOST',
  databaseUrl: 'DATABASE_URL',
  settlementJournalDir: 'SETTLEMENT_JOURNAL_DIR',
  logLevel: 'LOG_LEVEL',
  bodyLimitBytes: 'BODY_LIMIT_BYTES',
  demo: 'TOLLGATE_DEMO',
  redisUrl: 'REDIS_URL',
  catalogPollMs: 'CATALOG_POLL_MS',
  freeTokensPerDay: 'FREE_TOKENS_PER_DAY',
  rateLimitFailOpen: 'RATE_LIMIT_FAIL_OPEN',
  reservationTtlMs: 'RESERVATION_TTL_MS',
  sweepIntervalMs: 'SWEEP_INTERVAL_MS',
  alertEvaluateIntervalMs: 'ALERT_EVALUATE_INTERVAL_MS',
  alertRetryBaseMs: 'ALERT_RETRY_BASE_MS',
  checkpointIntervalMs: 'CHECKPOINT_INTERVAL_MS',
  shortTimersForTests: 'TOLLGATE_SHORT_TIMERS',
  usageRetentionDays: 'USAGE_RETENTION_DAYS',
  responsesRetentionDays: 'RESPONSES_RETENTION_DAYS',
  registrationsPerIp: 'REGISTRATIONS_PER_IP',
  smtpUrl: 'SMTP_URL',
  mailFrom: 'MAIL_FROM',
  requireVerifiedEmail: 'REQUIRE_VERIFIED_EMAIL',
  stripeSecretKey: 'STRIPE_SECRET_KEY',
  stripeWebhookSecret: 'STRIPE_WEBHOOK_SECRET',
  publicBaseUrl: 'PUBLIC_BASE_URL',
  trustProxy: 'TRUST_PROXY',
  streamKeepAliveMs: 'STREAM_KEEPALIVE_MS',
  tlsCertFile: 'TLS_CERT_FILE',
  tlsKeyFile: 'TLS_KEY_FILE',
  shutdownGraceMs: 'SHUTDOWN_GRACE_MS',
  metricsToken: 'METRICS_TOKEN',
  requestTimeoutMs: 'REQUEST_TIMEOUT_MS',
  headersTimeoutMs: 'HEADERS_TIMEOUT_MS',
  maxHeaderBytes: 'MAX_HEADER_BYTES',
  ...USAGE_EXPORT_SETTING_NAMES,
};

/** `settlement-journal` beside the SQLite file (the data directory), or under `./data` for PostgreSQL. */
function defaultJournalDirectory(databaseUrl: string): string {
  let target: DatabaseTarget;
  try {
    target = parseDatabaseUrl(databaseUrl);
  } catch {
    // A bad URL is reported when storage opens it, naming the setting; the journal's default does not matter then.
    return join('data', 'settlement-journal');
  }
  if (target.kind === 'sqlite' && target.filename !== ':memory:')
    return join(dirname(target.filename), 'settlement-journal');
  return join('data', 'settlement-journal');
}

function formatIssues(error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const path = issue.path.map(String);
    let name = path.join('.');
    if (path.length === 1 && SETTING_NAMES[path[0]!] !== undefined) name = `${SETTING_NAMES[path[0]!]} (${path[0]})`;
    if (path[0] === 'vendors' && path.length === 3 && (path[2] === 'apiKey' || path[2] === 'baseUrl')) {
      const envName = `${path[1]!.toUpperCase()}_${path[2] === 'apiKey' ? 'API_KEY' : 'BASE_URL'}`;
      name = `${envName} (${name})`;
    }
    return `  - ${name || '(root)'}: ${issue.message}`;
  });
  return `Invalid configuration:\n${lines.join('\n')}`;
}

/** A vendor's or deployment's settings, with its credentials listed and labelled. */
function upstreamOf(
  settings: ParsedConfig['vendors']['anthropic'],
  baseUrl: string,
  configured: boolean,
): VendorConfig {
  const listed = settings.credentials ?? [];
  const credentials =
    listed.length > 0
      ? listed.map((credential, index) => ({
          apiKey: credential.apiKey,
          baseUrl: credential.baseUrl ?? baseUrl,
          label: credential.label ?? `#${index + 1}`,
        }))
      : [{ apiKey: settings.apiKey, baseUrl, label: '#1' }];
  return Object.freeze({
    apiKey: credentials[0]!.apiKey,
    baseUrl,
    configured,
    credentials: Object.freeze(credentials.map((credential) => Object.freeze(credential))),
    timeouts: Object.freeze({ ...settings.timeouts }),
    retries: Object.freeze({ ...settings.retries }),
    circuitBreaker: Object.freeze({ ...settings.circuitBreaker }),
  });
}

/** A deployment's checked settings as the providers take them (tollgate.yaml's, or the operator's stored entry). */
export function deploymentOf(name: string, settings: ParsedConfig['deployments'][string]): DeploymentConfig {
  return Object.freeze({
    ...upstreamOf(settings, settings.baseUrl, true),
    name,
    family: settings.family,
    weight: settings.weight,
    rpm: settings.rpm,
    maxConcurrent: settings.maxConcurrent,
  });
}

/** `name: model-id` or `name: { model, fallbacks }`, as one shape. */
export function aliasOf(alias: ParsedConfig['aliases'][string]): AliasConfig {
  return Object.freeze(
    typeof alias === 'string'
      ? { model: alias, fallbacks: undefined }
      : { model: alias.model, fallbacks: alias.fallbacks },
  );
}

function finalize(parsed: ParsedConfig, configFile: string | undefined): Config {
  const vendors = {} as Record<VendorName, VendorConfig>;
  for (const vendor of VENDOR_NAMES) {
    const settings = parsed.vendors[vendor];
    const baseUrl = settings.baseUrl ?? DEFAULT_VENDOR_BASE_URLS[vendor];
    const configured =
      settings.apiKey !== undefined || settings.baseUrl !== undefined || (settings.credentials ?? []).length > 0;
    vendors[vendor] = upstreamOf(settings, baseUrl, configured);
  }
  const deployments: Record<string, DeploymentConfig> = {};
  for (const [name, settings] of Object.entries(parsed.deployments)) deployments[name] = deploymentOf(name, settings);
  const aliases: Record<string, AliasConfig> = {};
  for (const [name, alias] of Object.entries(parsed.aliases)) aliases[name] = aliasOf(alias);
  const anyVendorConfigured = VENDOR_NAMES.some((vendor) => vendors[vendor].configured);
  return Object.freeze({
    port: parsed.port,
    host: parsed.host,
    databaseUrl: parsed.databaseUrl,
    settlementJournalDir: parsed.settlementJournalDir ?? defaultJournalDirectory(parsed.databaseUrl),
    logLevel: parsed.logLevel,
    bodyLimitBytes: parsed.bodyLimitBytes,
    demoMode: parsed.demo || !anyVendorConfigured,
    vendors: Object.freeze(vendors),
    models: parsed.models,
    aliases: Object.freeze(aliases),
    deployments: Object.freeze(deployments),
    catalogPollMs: parsed.catalogPollMs,
    configFile,
    redisUrl: parsed.redisUrl,
    freeTokensPerDay: parsed.freeTokensPerDay,
    reservationTtlMs: parsed.reservationTtlMs,
    sweepIntervalMs: parsed.sweepIntervalMs,
    alertEvaluateIntervalMs: parsed.alertEvaluateIntervalMs,
    alertRetryBaseMs: parsed.alertRetryBaseMs,
    checkpointIntervalMs: parsed.checkpointIntervalMs,
    usageRetentionDays: parsed.usageRetentionDays,
    responsesRetentionDays: parsed.responsesRetentionDays,
    registrationsPerIp: parsed.registrationsPerIp,
    mail:
      parsed.smtpUrl === undefined || parsed.mailFrom === undefined
        ? undefined
        : Object.freeze({ smtpUrl: parsed.smtpUrl, from: parsed.mailFrom }),
    requireVerifiedEmail: parsed.requireVerifiedEmail ?? parsed.smtpUrl !== undefined,
    rateLimitFailOpen: parsed.rateLimitFailOpen,
    tiers: parsed.tiers,
    stripe:
      parsed.stripeSecretKey === undefined || parsed.stripeWebhookSecret === undefined
        ? undefined
        : Object.freeze({ secretKey: parsed.stripeSecretKey, webhookSecret: parsed.stripeWebhookSecret }),
    publicBaseUrl: parsed.publicBaseUrl,
    ssoProviders: Object.freeze(parsed.ssoProviders.map((provider) => Object.freeze(provider))),
    trustProxy: parsed.trustProxy,
    streamKeepAliveMs: parsed.streamKeepAliveMs,
    tls:
      parsed.tlsCertFile === undefined || parsed.tlsKeyFile === undefined
        ? undefined
        : Object.freeze({ certFile: parsed.tlsCertFile, keyFile: parsed.tlsKeyFile }),
    shutdownGraceMs: parsed.shutdownGraceMs,
    metricsToken: parsed.metricsToken,
    requestTimeoutMs: parsed.requestTimeoutMs,
    headersTimeoutMs: parsed.headersTimeoutMs,
    maxHeaderBytes: parsed.maxHeaderBytes,
    usageExport: usageExportSettings(parsed, parsed.reservationTtlMs, parsed.sweepIntervalMs),
  });
}
