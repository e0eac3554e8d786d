import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { VendorName } from '../canonical/request.js';
import type { Tiers } from '../ratelimit/tiers.js';
import { configSchema, DEFAULT_VENDOR_BASE_URLS, VENDOR_NAMES, type ParsedConfig } from './config-schema.js';

export interface VendorConfig {
  apiKey: string | undefined;
  baseUrl: string;
  /** True when the operator gave a key or a base URL: the vendor is meant to be reached. */
  configured: boolean;
}

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  logLevel: ParsedConfig['logLevel'];
  bodyLimitBytes: number;
  /** Every family served by the in-process simulator (no vendor configured, or forced). */
  demoMode: boolean;
  vendors: Readonly<Record<VendorName, VendorConfig>>;
  models: ParsedConfig['models'];
  redisUrl: string | undefined;
  rateLimitFailOpen: boolean;
  freeTokensPerDay: number;
  reservationTtlMs: number;
  tiers: Tiers;
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
  return finalize(result.data);
}

function readConfigFile(env: Environment, cwd: string): Record<string, unknown> {
  const explicit = env.TOLLGATE_CONFIG;
  const path = explicit ?? `${cwd}/tollgate.yaml`;
  if (!existsSync(path)) {
    if (explicit !== undefined) throw new ConfigError(`TOLLGATE_CONFIG names ${explicit}, which does not exist.`);
    return {};
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path} is not valid YAML: ${(error as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`${path} must hold a mapping of settings.`);
  return parsed as Record<string, unknown>;
}

function environmentValues(env: Environment, fileValues: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  if (env.PORT !== undefined) values.port = integerFrom('PORT', env.PORT);
  if (env.HOST !== undefined) values.host = env.HOST;
  if (env.DATABASE_URL !== undefined) values.databaseUrl = env.DATABASE_URL;
  if (env.LOG_LEVEL !== undefined) values.logLevel = env.LOG_LEVEL;
  if (env.BODY_LIMIT_BYTES !== undefined) values.bodyLimitBytes = integerFrom('BODY_LIMIT_BYTES', env.BODY_LIMIT_BYTES);
  if (env.TOLLGATE_DEMO !== undefined) values.demo = booleanFrom('TOLLGATE_DEMO', env.TOLLGATE_DEMO);
  if (env.FREE_TOKENS_PER_DAY !== undefined) values.freeTokensPerDay = integerFrom('FREE_TOKENS_PER_DAY', env.FREE_TOKENS_PER_DAY);
  if (env.REDIS_URL !== undefined && env.REDIS_URL !== '') values.redisUrl = env.REDIS_URL;
  if (env.RATE_LIMIT_FAIL_OPEN !== undefined) values.rateLimitFailOpen = booleanFrom('RATE_LIMIT_FAIL_OPEN', env.RATE_LIMIT_FAIL_OPEN);

  const fileVendors = (fileValues.vendors ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const vendors: Record<string, Record<string, unknown>> = {};
  for (const vendor of VENDOR_NAMES) {
    const prefix = vendor.toUpperCase();
    const fromEnv: Record<string, unknown> = {};
    const apiKey = env[`${prefix}_API_KEY`];
    const baseUrl = env[`${prefix}_BASE_URL`];
    if (apiKey !== undefined && apiKey !== '') fromEnv.apiKey = apiKey;
    if (baseUrl !== undefined && baseUrl !== '') fromEnv.baseUrl = baseUrl;
    vendors[vendor] = { ...(fileVendors[vendor] ?? {}), ...fromEnv };
  }
  values.vendors = { ...fileVendors, ...vendors };
  return values;
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
  logLevel: 'LOG_LEVEL',
  bodyLimitBytes: 'BODY_LIMIT_BYTES',
  demo: 'TOLLGATE_DEMO',
  redisUrl: 'REDIS_URL',
  freeTokensPerDay: 'FREE_TOKENS_PER_DAY',
  rateLimitFailOpen: 'RATE_LIMIT_FAIL_OPEN',
};

function formatIssues(error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const path = issue.path.map(String);
    let name = path.join('.');
    if (path.length === 1 && SETTING_NAMES[path[0]!] !== undefined) name = `${SETTING_NAMES[path[0]!]} (${path[0]})`;
    if (path[0] === 'vendors' && path.length === 3) {
      const envName = `${path[1]!.toUpperCase()}_${path[2] === 'apiKey' ? 'API_KEY' : 'BASE_URL'}`;
      name = `${envName} (${name})`;
    }
    return `  - ${name || '(root)'}: ${issue.message}`;
  });
  return `Invalid configuration:\n${lines.join('\n')}`;
}

function finalize(parsed: ParsedConfig): Config {
  const vendors = {} as Record<VendorName, VendorConfig>;
  for (const vendor of VENDOR_NAMES) {
    const settings = parsed.vendors[vendor];
    vendors[vendor] = Object.freeze({
      apiKey: settings.apiKey,
      baseUrl: settings.baseUrl ?? DEFAULT_VENDOR_BASE_URLS[vendor],
      configured: settings.apiKey !== undefined || settings.baseUrl !== undefined,
    });
  }
  const anyVendorConfigured = VENDOR_NAMES.some((vendor) => vendors[vendor].configured);
  return Object.freeze({
    port: parsed.port,
    host: parsed.host,
    databaseUrl: parsed.databaseUrl,
    logLevel: parsed.logLevel,
    bodyLimitBytes: parsed.bodyLimitBytes,
    demoMode: parsed.demo || !anyVendorConfigured,
    vendors: Object.freeze(vendors),
    models: parsed.models,
    redisUrl: parsed.redisUrl,
    freeTokensPerDay: parsed.freeTokensPerDay,
    reservationTtlMs: parsed.reservationTtlMs,
    rateLimitFailOpen: parsed.rateLimitFailOpen,
    tiers: parsed.tiers,
  });
}
