import { z } from 'zod';
import { webhookUrlProblem } from '../telemetry/webhooks/url-policy.js';
import type { UsageExportSettings, UsageSinkSettings } from '../telemetry/usage-export/usage-export-settings.js';

type Environment = Readonly<Record<string, string | undefined>>;

const sinkName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a lowercase name (letters, digits, _ and -)');
const batchSize = z.number().int().min(1).max(1_000);
const flushIntervalMs = z.number().int().min(100);
/** Receivers verify the signature with it: long enough not to be guessed. */
const webhookSecret = z.string().min(16, 'must be at least 16 characters');

const webhookSinkSchema = z
  .object({
    type: z.literal('webhook'),
    name: sinkName,
    /** https:// (http:// only to loopback with WEBHOOK_ALLOW_HTTP_LOOPBACK, for testing): checked with the rest. */
    url: z.string().min(1),
    /** Or USAGE_EXPORT_<NAME>_SECRET in the environment (the name upper-cased, dashes as underscores). */
    secret: webhookSecret,
    batchSize: batchSize.default(100),
    flushIntervalMs: flushIntervalMs.default(5_000),
    maxAttempts: z.number().int().min(1).max(10).default(5),
    timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  })
  .strict();

const ndjsonSinkSchema = z
  .object({
    type: z.literal('ndjson'),
    name: sinkName,
    directory: z.string().min(1),
    batchSize: batchSize.default(500),
    flushIntervalMs: flushIntervalMs.default(5_000),
  })
  .strict();

/** The usage export's settings, spread into the configuration's schema (flat, like every other setting). */
export const usageExportFields = {
  /** One webhook sink, named `webhook`, from the environment; `usageExportSinks` for several. */
  usageExportWebhookUrl: z.string().min(1).optional(),
  usageExportWebhookSecret: webhookSecret.optional(),
  /** One NDJSON file sink, named `ndjson`, writing a file per UTC day in this directory. */
  usageExportNdjsonDir: z.string().min(1).optional(),
  /** The environment's sinks' batch size and flush interval. */
  usageExportBatchSize: batchSize.optional(),
  usageExportFlushMs: flushIntervalMs.optional(),
  /** Records are exported once this old (ms): a request settles under its start time (default 16 min 30 s). */
  usageExportSettleDelayMs: z.number().int().min(0).optional(),
  /** Sinks in tollgate.yaml, each with a name of its own (the cursor's key). */
  usageExportSinks: z.array(z.discriminatedUnion('type', [webhookSinkSchema, ndjsonSinkSchema])).default([]),
  /** Testing only: webhooks may go to http:// on loopback, and to loopback addresses at all. */
  webhookAllowHttpLoopback: z.boolean().default(false),
};

export const USAGE_EXPORT_SETTING_NAMES: Record<string, string> = {
  usageExportWebhookUrl: 'USAGE_EXPORT_WEBHOOK_URL',
  usageExportWebhookSecret: 'USAGE_EXPORT_WEBHOOK_SECRET',
  usageExportNdjsonDir: 'USAGE_EXPORT_NDJSON_DIR',
  usageExportBatchSize: 'USAGE_EXPORT_BATCH_SIZE',
  usageExportFlushMs: 'USAGE_EXPORT_FLUSH_MS',
  usageExportSettleDelayMs: 'USAGE_EXPORT_SETTLE_DELAY_MS',
  webhookAllowHttpLoopback: 'WEBHOOK_ALLOW_HTTP_LOOPBACK',
};

interface ParsedUsageExport {
  usageExportWebhookUrl?: string | undefined;
  usageExportWebhookSecret?: string | undefined;
  usageExportNdjsonDir?: string | undefined;
  usageExportBatchSize?: number | undefined;
  usageExportFlushMs?: number | undefined;
  usageExportSettleDelayMs?: number | undefined;
  usageExportSinks: z.output<typeof webhookSinkSchema | typeof ndjsonSinkSchema>[];
  webhookAllowHttpLoopback: boolean;
}

/** The checks that read several settings at once: URLs against the loopback allowance, a secret with its URL. */
export function checkUsageExport(config: ParsedUsageExport, context: z.RefinementCtx): void {
  const policy = { allowHttpLoopback: config.webhookAllowHttpLoopback };
  if (config.usageExportWebhookUrl !== undefined) {
    const problem = webhookUrlProblem(config.usageExportWebhookUrl, policy);
    if (problem !== null) context.addIssue({ code: 'custom', message: problem, path: ['usageExportWebhookUrl'] });
    if (config.usageExportWebhookSecret === undefined)
      context.addIssue({
        code: 'custom',
        message: 'set USAGE_EXPORT_WEBHOOK_SECRET (deliveries are signed with it) with USAGE_EXPORT_WEBHOOK_URL',
        path: ['usageExportWebhookSecret'],
      });
  }
  const names = new Set<string>();
  if (config.usageExportWebhookUrl !== undefined) names.add('webhook');
  if (config.usageExportNdjsonDir !== undefined) names.add('ndjson');
  for (const [index, sink] of config.usageExportSinks.entries()) {
    if (names.has(sink.name))
      context.addIssue({
        code: 'custom',
        message: `a sink named ${sink.name} exists already`,
        path: ['usageExportSinks', index, 'name'],
      });
    names.add(sink.name);
    if (sink.type !== 'webhook') continue;
    const problem = webhookUrlProblem(sink.url, policy);
    if (problem !== null)
      context.addIssue({ code: 'custom', message: problem, path: ['usageExportSinks', index, 'url'] });
  }
}

/** The environment's usage export settings, and sink secrets filled into the file's sinks. */
export function usageExportFromEnvironment(
  env: Environment,
  fileValues: Record<string, unknown>,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  const text = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const integer = (name: string) => {
    const raw = text(name);
    if (raw === undefined) return undefined;
    return /^\d+$/.test(raw.trim()) ? Number(raw) : `${name}=${raw}`;
  };
  if (text('USAGE_EXPORT_WEBHOOK_URL') !== undefined) values.usageExportWebhookUrl = text('USAGE_EXPORT_WEBHOOK_URL');
  if (text('USAGE_EXPORT_WEBHOOK_SECRET') !== undefined)
    values.usageExportWebhookSecret = text('USAGE_EXPORT_WEBHOOK_SECRET');
  if (text('USAGE_EXPORT_NDJSON_DIR') !== undefined) values.usageExportNdjsonDir = text('USAGE_EXPORT_NDJSON_DIR');
  for (const [key, name] of [
    ['usageExportBatchSize', 'USAGE_EXPORT_BATCH_SIZE'],
    ['usageExportFlushMs', 'USAGE_EXPORT_FLUSH_MS'],
    ['usageExportSettleDelayMs', 'USAGE_EXPORT_SETTLE_DELAY_MS'],
  ] as const) {
    const value = integer(name);
    if (value !== undefined) values[key] = value;
  }
  const allow = text('WEBHOOK_ALLOW_HTTP_LOOPBACK')?.trim().toLowerCase();
  if (allow !== undefined)
    values.webhookAllowHttpLoopback = ['1', 'true', 'yes', 'on'].includes(allow)
      ? true
      : ['0', 'false', 'no', 'off'].includes(allow)
        ? false
        : `WEBHOOK_ALLOW_HTTP_LOOPBACK=${allow}`;
  // Secrets belong in the environment, not the file: USAGE_EXPORT_<NAME>_SECRET fills a file sink's `secret`.
  if (Array.isArray(fileValues.usageExportSinks))
    values.usageExportSinks = fileValues.usageExportSinks.map((sink: unknown) => {
      if (sink === null || typeof sink !== 'object' || !('name' in sink) || typeof sink.name !== 'string') return sink;
      const secret = text(`USAGE_EXPORT_${sink.name.toUpperCase().replaceAll('-', '_')}_SECRET`);
      return secret === undefined ? sink : { ...sink, secret };
    });
  return values;
}

/** The sinks the environment and the file describe, as the exporter takes them. */
export function usageExportSettings(
  parsed: ParsedUsageExport,
  reservationTtlMs: number,
  sweepIntervalMs: number,
): UsageExportSettings {
  const sinks: UsageSinkSettings[] = [];
  if (parsed.usageExportWebhookUrl !== undefined && parsed.usageExportWebhookSecret !== undefined)
    sinks.push({
      type: 'webhook',
      name: 'webhook',
      url: parsed.usageExportWebhookUrl,
      secret: parsed.usageExportWebhookSecret,
      batchSize: parsed.usageExportBatchSize ?? 100,
      flushIntervalMs: parsed.usageExportFlushMs ?? 5_000,
      maxAttempts: 5,
      timeoutMs: 10_000,
    });
  if (parsed.usageExportNdjsonDir !== undefined)
    sinks.push({
      type: 'ndjson',
      name: 'ndjson',
      directory: parsed.usageExportNdjsonDir,
      batchSize: parsed.usageExportBatchSize ?? 500,
      flushIntervalMs: parsed.usageExportFlushMs ?? 5_000,
    });
  sinks.push(...parsed.usageExportSinks);
  return Object.freeze({
    sinks: Object.freeze(sinks.map((sink) => Object.freeze(sink))),
    // A request settles under its start time: wait out the longest a hold can live before the sweeper bills it
    // (the hold's lifetime and a sweep), plus a minute for settlements in flight.
    settleDelayMs: parsed.usageExportSettleDelayMs ?? reservationTtlMs + sweepIntervalMs + 60_000,
    allowHttpLoopback: parsed.webhookAllowHttpLoopback,
  });
}
