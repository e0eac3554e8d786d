import { z } from 'zod';
import { tiersSchema } from '../ratelimit/tiers.js';
import { ssoProvidersSchema } from './sso-settings.js';
import { checkUsageExport, usageExportFields } from './usage-export-settings.js';

export const VENDOR_NAMES = ['anthropic', 'openai', 'gemini', 'deepseek'] as const;

/** Each official SDK's default base URL convention: OpenAI's ends in /v1, the others are bare origins. */
export const DEFAULT_VENDOR_BASE_URLS = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1',
  gemini: 'https://generativelanguage.googleapis.com',
  deepseek: 'https://api.deepseek.com',
} as const;

export const httpUrl = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//.test(value), 'must be an http:// or https:// URL')
  .transform((value) => value.replace(/\/+$/, ''));

/** The model families, each served by one vendor's wire protocol (catalog/models.ts). */
export const MODEL_FAMILIES = ['alpha', 'beta', 'gamma', 'delta'] as const;

/** A public model name: what clients send as `model`. */
export const publicName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'must be a model name (letters, digits, . _ : / -)');

/** One of several credentials of a vendor (requests are spread over them; see "Upstream resilience"). */
const credentialSchema = z
  .object({
    apiKey: z.string().min(1),
    /** Defaults to the vendor's `baseUrl`. */
    baseUrl: httpUrl.optional(),
    /** Shown in metrics and GET /api/admin/upstreams (never the key); defaults to `#1`, `#2`, … */
    label: z.string().min(1).max(64).optional(),
  })
  .strict();

export const vendorFields = {
  apiKey: z.string().min(1).optional(),
  baseUrl: httpUrl.optional(),
  /** Several credentials (replaces `apiKey` when given); env `<VENDOR>_API_KEYS=k1,k2` is the shorthand. */
  credentials: z.array(credentialSchema).min(1).optional(),
  timeouts: z
    .object({
      connectMs: z.number().int().min(1).default(10_000),
      firstByteMs: z.number().int().min(1).default(60_000),
      /** Non-stream replies come whole when the model is done: this bounds the whole generation. */
      nonStreamMs: z.number().int().min(1).default(600_000),
      idleMs: z.number().int().min(1).default(60_000),
    })
    .strict()
    .prefault({}),
  /** Attempts before anything reached the client, on connection errors, timeouts, 429 and 5xx. */
  retries: z
    .object({
      maxAttempts: z.number().int().min(1).max(10).default(3),
      baseDelayMs: z.number().int().min(0).default(250),
      maxDelayMs: z.number().int().min(0).default(5_000),
    })
    .strict()
    .prefault({}),
  /** A credential failing `failureThreshold` times in a row gets no traffic for `cooldownMs` while others can serve. */
  circuitBreaker: z
    .object({
      failureThreshold: z.number().int().min(1).default(5),
      cooldownMs: z.number().int().min(0).default(30_000),
      /** The longest cool-down: each failed probe after one doubles it, up to this (default 16 × cooldownMs). */
      maxCooldownMs: z.number().int().min(0).optional(),
    })
    .strict()
    .prefault({}),
};

const vendorSchema = z.object(vendorFields).strict();

/** What a deployment has besides a vendor's fields: the family it speaks, its share and its limits. */
export const deploymentOnlyFields = {
  family: z.enum(MODEL_FAMILIES),
  baseUrl: httpUrl,
  /** Share of the model's requests, relative to the other deployments serving it. */
  weight: z.number().positive().max(1_000_000).default(1),
  /** Requests per minute at most: a full deployment is skipped; when all are, the model's fallback chain is taken. */
  rpm: z.number().int().positive().optional(),
  /** Upstream requests in flight at once on one instance: a full deployment is skipped like a cooling one. */
  maxConcurrent: z.number().int().positive().optional(),
};

/**
 * One deployment: a base URL and its credentials, speaking a family's vendor protocol. Models name the deployments
 * that serve them; requests are spread over them by weight, each with its own health and concurrency limit.
 */
export const deploymentSchema = z
  .object({ ...vendorFields, ...deploymentOnlyFields })
  .strict()
  .refine((deployment) => deployment.apiKey !== undefined || deployment.credentials !== undefined, {
    message: 'needs credentials: apiKey or credentials',
    path: ['apiKey'],
  });

/** A deployment's name: what models list in `deployments`. */
export const deploymentName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a lowercase name');

/** `name: model-id`, or `name: { model, fallbacks }` with a chain of its own. */
export const aliasSchema = z.union([
  publicName,
  z.object({ model: publicName, fallbacks: z.array(z.string().min(1)).min(1).max(8).optional() }).strict(),
]);

/** USD per 1M tokens as a decimal string (or number written in YAML), e.g. "2.50". */
export const usdPerMillion = z
  .union([z.string(), z.number()])
  .transform(String)
  .pipe(z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'must be USD per 1M tokens, e.g. "2.50"'));

export const modelOverrideSchema = z
  .object({
    /** Required for a model the gateway does not list (an addition): the vendor protocol that serves it. */
    family: z.enum(MODEL_FAMILIES).optional(),
    description: z.string().min(1).max(200).optional(),
    upstreamModel: z.string().min(1).optional(),
    /** beta models: the vendor's search model that answers requests with a web search (default gpt-5-search-api). */
    webSearchUpstreamModel: z.string().min(1).optional(),
    /** Public model id served instead when this model's vendor fails (after its retries); off by default. */
    fallback: z.string().min(1).optional(),
    /** Public model ids (or aliases) tried in order when the one before failed before its first byte. */
    fallbacks: z.array(z.string().min(1)).min(1).max(8).optional(),
    /** Named `deployments` that serve the model (weighted); default: the family's vendor under `vendors`. */
    deployments: z.array(z.string().min(1)).min(1).optional(),
    /** What the model accepts: a request needing another is refused with a 400 (default: not restricted). */
    capabilities: z.array(z.enum(['vision', 'tools', 'webSearch'])).optional(),
    /** Refuse new requests (a 400 naming `replacement`); usage history keeps the model. */
    retired: z.boolean().optional(),
    replacement: z.string().min(1).optional(),
    /** alpha models the operator adds: Anthropic's minimum cacheable prompt for the model. */
    minCacheablePromptTokens: z.number().int().positive().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    /** The longest prompt served, in tokens: longer ones are refused as the vendor would (default: the model's). */
    contextWindow: z.number().int().positive().optional(),
    /** Output tokens a request's hold grows by at a time (default 2,048, or the model's limit when lower). */
    outputSliceTokens: z.number().int().positive().optional(),
    /** alpha models: the gateway places prompt-cache breakpoints for clients that cannot (default true). */
    automaticCaching: z.boolean().optional(),
    prices: z
      .object({
        input: usdPerMillion.optional(),
        output: usdPerMillion.optional(),
        cacheRead: usdPerMillion.optional(),
        cacheWrite: usdPerMillion.optional(),
        /** A prompt token written to the cache for 1 hour; default: the 5-minute write price. */
        cacheWrite1h: usdPerMillion.optional(),
      })
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
    /** Where settlements the database refused wait for replay; default: `settlement-journal` under the data directory. */
    settlementJournalDir: z.string().min(1).optional(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Largest accepted request body, in bytes. */
    bodyLimitBytes: z
      .number()
      .int()
      .positive()
      .default(8 * 1024 * 1024),
    /** Serve every vendor from the in-process simulator even when credentials are configured. */
    demo: z.boolean().default(false),
    vendors: z
      .object({
        anthropic: vendorSchema.prefault({}),
        openai: vendorSchema.prefault({}),
        gemini: vendorSchema.prefault({}),
        deepseek: vendorSchema.prefault({}),
      })
      .strict()
      // prefault: the default goes through the schema, so each vendor gets its timeout/retry defaults.
      .prefault({ anthropic: {}, openai: {}, gemini: {}, deepseek: {} }),
    models: z.record(publicName, modelOverrideSchema).default({}),
    /** Public names that serve another model (`claude-sonnet-latest: alpha-sonnet-5`). */
    aliases: z.record(publicName, aliasSchema).default({}),
    /** Named upstream deployments that models may be served from. */
    deployments: z.record(deploymentName, deploymentSchema).default({}),
    /** How often each instance reads the catalog's revision to pick up the operator's stored edits. */
    catalogPollMs: z.number().int().min(100).max(3_600_000).default(5_000),
    /** `redis://…`: rate limits shared by every gateway instance. Without it, limits are per process. */
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .optional(),
    /** When Redis is unreachable: admit (and log, default) or refuse with 503. */
    rateLimitFailOpen: z.boolean().default(true),
    /** Free tokens (input + output) per account per UTC day, spent before the paid balance; 0 disables. */
    freeTokensPerDay: z.number().int().min(0).default(1_000_000),
    /**
     * How long an unsettled hold lives before the sweeper releases it (a crashed instance's requests). It must
     * outlast the longest stream, hence at least 60 s, unless `shortTimersForTests` (TOLLGATE_SHORT_TIMERS) allows
     * down to 1 s for tests (see the refinement below).
     */
    reservationTtlMs: z
      .number()
      .int()
      .min(1_000)
      .default(15 * 60_000),
    /** How often each instance sweeps expired holds (every instance may; each release claims its hold). */
    sweepIntervalMs: z.number().int().min(500).default(30_000),
    /** How often each instance evaluates every budget alert rule (a settlement also nudges its organisation's). */
    alertEvaluateIntervalMs: z.number().int().min(100).default(30_000),
    /** The first retry of a failed alert delivery is due within this long; each next within twice as long. */
    alertRetryBaseMs: z.number().int().min(10).default(5_000),
    /**
     * How often each instance writes, in one batch, the checkpoint of output delivered by each of its streams
     * (and renews their holds): what a crash of the instance can leave unbilled is at most this long of output.
     */
    checkpointIntervalMs: z.number().int().min(100).default(3_000),
    /** Tests only: permits RESERVATION_TTL_MS below 60 s, so orphaned holds can be swept within a test's time. */
    shortTimersForTests: z.boolean().default(false),
    /** Days per-request usage rows are kept (GET /v1/usage/requests); daily totals are kept forever. 0 keeps rows forever. */
    usageRetentionDays: z.number().int().min(0).default(90),
    /** Days stored Responses (`POST /v1/responses` with `store`) are kept; 0 keeps them forever. */
    responsesRetentionDays: z.number().int().min(0).default(30),
    /** Outgoing mail (verification and reset links): `smtp://user:pass@host:587` or `smtps://…:465`. Unset: no mail. */
    smtpUrl: z
      .string()
      .refine((value) => /^smtps?:\/\/[^/]/.test(value), 'must be an smtp:// or smtps:// URL')
      .optional(),
    /** The From of every mail, e.g. `Tollgate <noreply@example.com>`. */
    mailFrom: z.string().min(3).max(200).optional(),
    /**
     * Unverified accounts may sign in and see the dashboard but not create keys. Default: on when mail is
     * configured, off otherwise (nobody could verify).
     */
    requireVerifiedEmail: z.boolean().optional(),
    /** Dashboard registrations per client IP in a rolling 15 minutes; 0 turns the limit off. */
    registrationsPerIp: z.number().int().min(0).default(5),
    /** Rate-limit tiers by name, merged over the defaults (standard 100/min, pro 1,000/min, enterprise 10,000/min). */
    tiers: tiersSchema,
    /** Stripe top-ups through Checkout: both the secret key and the webhook signing secret, or neither. */
    stripeSecretKey: z
      .string()
      .regex(/^(sk|rk)_/, 'must be a Stripe secret key (sk_… or rk_…)')
      .optional(),
    stripeWebhookSecret: z
      .string()
      .regex(/^whsec_/, 'must be a Stripe webhook signing secret (whsec_…)')
      .optional(),
    /** The dashboard's public origin (e.g. https://gateway.example.com): Checkout return URLs; https here makes cookies Secure. */
    publicBaseUrl: httpUrl.optional(),
    /** OpenID Connect providers for dashboard sign-in (docs/sign-in.md); the config file only. */
    ssoProviders: ssoProvidersSchema,
    /** Behind a reverse proxy: trust its X-Forwarded-For/-Proto (true, a hop count, or comma-separated addresses/CIDRs). */
    trustProxy: z.union([z.boolean(), z.number().int().min(1), z.string().min(1)]).default(false),
    /** Interval of `: keep-alive` comments on a stream while the upstream is silent, so proxies keep it open. */
    streamKeepAliveMs: z.number().int().min(10).default(15_000),
    /** PEM files: serve HTTPS directly (both, or neither for plain HTTP behind a TLS-terminating proxy). */
    tlsCertFile: z.string().min(1).optional(),
    tlsKeyFile: z.string().min(1).optional(),
    /** On SIGTERM/SIGINT: how long in-flight requests and streams may take to finish before they are cut with an error. */
    shutdownGraceMs: z.number().int().min(0).default(30_000),
    /** When set, `GET /metrics` needs `Authorization: Bearer <token>`. */
    metricsToken: z.string().min(16, 'must be at least 16 characters').optional(),
    /** Slow-loris guards: the whole request (headers and body) must arrive within this time… */
    requestTimeoutMs: z.number().int().min(1_000).default(30_000),
    /** …and the headers within this one. */
    headersTimeoutMs: z.number().int().min(1_000).default(10_000),
    /** Largest accepted request head (request line and headers), in bytes. */
    maxHeaderBytes: z.number().int().min(1_024).max(1_048_576).default(16_384),
    /** Usage export sinks (docs/usage-export.md). */
    ...usageExportFields,
  })
  .strict()
  .superRefine(checkUsageExport)
  .refine((config) => config.headersTimeoutMs <= config.requestTimeoutMs, {
    message: 'must not exceed REQUEST_TIMEOUT_MS (the headers are part of the request)',
    path: ['headersTimeoutMs'],
  })
  .refine((config) => (config.tlsCertFile === undefined) === (config.tlsKeyFile === undefined), {
    message: 'set both TLS_CERT_FILE and TLS_KEY_FILE, or neither',
    path: ['tlsKeyFile'],
  })
  .refine((config) => config.reservationTtlMs >= 60_000 || config.shortTimersForTests, {
    message:
      'must be at least 60000 (60 s) so holds outlive real streams; below that only with TOLLGATE_SHORT_TIMERS=1 (tests)',
    path: ['reservationTtlMs'],
  })
  .refine((config) => config.smtpUrl === undefined || config.mailFrom !== undefined, {
    message: 'set MAIL_FROM (the sender of verification and reset mail) with SMTP_URL',
    path: ['mailFrom'],
  })
  .refine((config) => config.smtpUrl === undefined || config.publicBaseUrl !== undefined, {
    // Links in mail are built from it, never from the request's Host header, which a caller chooses.
    message: 'set PUBLIC_BASE_URL (links in mail point there) with SMTP_URL',
    path: ['publicBaseUrl'],
  })
  .refine((config) => (config.stripeSecretKey === undefined) === (config.stripeWebhookSecret === undefined), {
    message: 'set both STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, or neither',
    path: ['stripeWebhookSecret'],
  });

export type ConfigInput = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;
