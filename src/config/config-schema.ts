import { z } from 'zod';
import { tiersSchema } from '../ratelimit/tiers.js';

export const VENDOR_NAMES = ['anthropic', 'openai', 'gemini', 'deepseek'] as const;

/** Each official SDK's default base URL convention: OpenAI's ends in /v1, the others are bare origins. */
export const DEFAULT_VENDOR_BASE_URLS = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
  gemini: 'https://generativelanguage.googleapis.com',
  deepseek: 'https://api.deepseek.com',
} as const;

const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL')
  .transform((value) => value.replace(/\/+$/, ''));

const vendorSchema = z
  .object({
    apiKey: z.string().min(1).optional(),
    baseUrl: httpUrl.optional(),
  })
  .strict();

/** USD per 1M tokens as a decimal string (or number written in YAML), e.g. "2.50". */
const usdPerMillion = z.union([z.string(), z.number()]).transform(String).pipe(z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'must be USD per 1M tokens, e.g. "2.50"'));

const modelOverrideSchema = z
  .object({
    upstreamModel: z.string().min(1).optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    prices: z
      .object({ input: usdPerMillion.optional(), output: usdPerMillion.optional(), cacheRead: usdPerMillion.optional(), cacheWrite: usdPerMillion.optional() })
      .strict()
      .optional(),
  })
  .strict();

/** The whole configuration, as merged from tollgate.yaml and the environment (environment wins). */
export const configSchema = z
  .object({
    port: z.number().int().min(0).max(65_535).default(8080),
    host: z.string().min(1).default('0.0.0.0'),
    databaseUrl: z.string().min(1).default('sqlite:./data/tollgate.db'),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Largest accepted request body, in bytes. */
    bodyLimitBytes: z.number().int().positive().default(8 * 1024 * 1024),
    /** Serve every vendor from the in-process simulator even when credentials are configured. */
    demo: z.boolean().default(false),
    vendors: z
      .object({
        anthropic: vendorSchema.default({}),
        openai: vendorSchema.default({}),
        gemini: vendorSchema.default({}),
        deepseek: vendorSchema.default({}),
      })
      .strict()
      .default({ anthropic: {}, openai: {}, gemini: {}, deepseek: {} }),
    models: z.record(z.string(), modelOverrideSchema).default({}),
    /** `redis://…`: rate limits shared by every gateway instance. Without it, limits are per process. */
    redisUrl: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
    /** When Redis is unreachable: admit (and log, default) or refuse with 503. */
    rateLimitFailOpen: z.boolean().default(true),
    /** Free tokens (input + output) per account per UTC day, spent before the paid balance; 0 disables. */
    freeTokensPerDay: z.number().int().min(0).default(1_000_000),
    /** How long an unsettled hold lives before the sweeper releases it (a crashed instance's requests). */
    reservationTtlMs: z.number().int().min(60_000).default(15 * 60_000),
    /** Rate-limit tiers by name, merged over the defaults (standard 100/min, pro 1,000/min, enterprise 10,000/min). */
    tiers: tiersSchema,
  })
  .strict();

export type ConfigInput = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;
