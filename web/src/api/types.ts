/**
 * The shapes of the dashboard JSON API (docs/dashboard-api.md). Money is exact decimal USD strings; times are epoch ms.
 */

export type Role = 'user' | 'admin';

export interface Account {
  id: string;
  email: string;
  role: Role;
  tier: string;
  createdAt: number;
}

export interface FreeAllowance {
  limitTokens: number;
  usedTokens: number;
  leftTokens: number;
  resetsAt: number;
}

export interface TierInfo {
  name: string;
  requestsPerMinute: number;
  tokensPerMinute: number | null;
}

export interface PeriodTotals {
  requests: number;
  tokens: number;
  costUsd: string;
}

export interface Overview {
  balanceUsd: string;
  reservedUsd: string;
  freeAllowance: FreeAllowance;
  tier: TierInfo;
  tiers: TierInfo[];
  today: PeriodTotals;
  month: PeriodTotals;
  spend30d: { day: string; costUsd: string }[];
  baseUrl: string;
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

export interface ApiKey {
  id: string;
  name: string;
  hint: string;
  /** `playground`: the dashboard playground's own key (no secret; cannot be revoked or rotated). */
  kind: 'standard' | 'playground';
  /** The project the key belongs to: its allowlist narrows the key's. */
  projectId: string;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
  status: KeyStatus;
  /** What the key may do (scopes, models, limits). Every scope listed for a standard key. */
  scopes: KeyScope[];
  /** Model ids and family words; null: every model. */
  models: string[] | null;
  spendLimit: KeySpendLimit | null;
  rateLimit: KeyRateLimit | null;
}

export type KeyScope = 'models:use' | 'usage:read' | 'keys:manage' | 'account:redeem';
export type SpendPeriod = 'day' | 'week' | 'month' | 'total';

export interface KeySpendLimit {
  usd: string;
  period: SpendPeriod;
  /** Settled this period. */
  spentUsd: string;
  /** Held by requests in flight. */
  heldUsd: string;
  /** Epoch ms; null for a total limit. */
  resetsAt: number | null;
  /** What is left is less than the smallest request holds at admission: paid requests are refused until it resets. */
  limitReached: boolean;
}

export interface KeyRateLimit {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

/** The permission fields the create and edit forms send (absent: unchanged on edit; null: no restriction). */
export interface KeyLimitsInput {
  scopes?: KeyScope[] | 'read_only' | 'full';
  models?: string[] | null;
  spendLimit?: { usd: string; period: SpendPeriod } | null;
  rateLimit?: { requestsPerMinute: number | null; tokensPerMinute: number | null } | null;
}

export interface TokenCounts {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  costUsd: string;
  /** Reported tokens no free allowance, balance or key limit could pay, and their cost at list price. */
  unbilledTokens: number;
  unbilledUsd: string;
}

export interface UsageDaily {
  days: { day: string; models: Record<string, TokenCounts> }[];
  byModel: (TokenCounts & { model: string })[];
  byKey: {
    keyId: string;
    keyName: string;
    hint: string;
    requests: number;
    inputTokens: number;
    outputTokens: number;
    costUsd: string;
    unbilledTokens: number;
    unbilledUsd: string;
  }[];
  byProject: {
    projectId: string;
    projectName: string | null;
    requests: number;
    inputTokens: number;
    outputTokens: number;
    costUsd: string;
    unbilledTokens: number;
    unbilledUsd: string;
  }[];
  /**
   * What the filters offer: every key and model with usage in the range (unfiltered), and every project of the
   * organisation.
   */
  filters: {
    models: string[];
    keys: { keyId: string; keyName: string | null; hint: string | null }[];
    projects: { projectId: string; projectName: string; archived: boolean }[];
  };
}

export interface UsageFilter {
  keyId?: string | undefined;
  model?: string | undefined;
  projectId?: string | undefined;
}

/** A group of the organisation's keys with its own model allowlist. */
export interface Project {
  id: string;
  name: string;
  /** Model ids and family words its keys may use; null: every model. */
  models: string[] | null;
  /** Keys created without a project go here; it cannot be archived. */
  isDefault: boolean;
  createdAt: number;
  archivedAt: number | null;
}

export interface UsageRequest {
  requestId: string;
  createdAt: number;
  model: string;
  keyId: string;
  keyName: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  reasoningTokens: number;
  costUsd: string;
  unbilledTokens: number;
  unbilledUsd: string;
  latencyMs: number | null;
  status: string | number;
  stream: boolean;
}

export interface Billing {
  balanceUsd: string;
  reservedUsd: string;
  freeAllowance: FreeAllowance;
  stripe: { enabled: boolean; minimumUsd: string; maximumUsd: string };
  /** Operators only: how to credit accounts (CLI commands, settings); null for users. */
  operatorHint: string | null;
  creditHint: string;
}

export type LedgerKind = 'topup' | 'usage' | 'refund' | 'adjustment' | 'redemption' | 'tier';

export interface LedgerEntry {
  id: string;
  kind: LedgerKind;
  amountUsd: string;
  balanceAfterUsd: string;
  /** A usage entry: reported tokens the settlement could not charge, and their cost at list price. */
  unbilledTokens: number;
  unbilledUsd: string;
  /** A usage entry: the vendor-run tools its request used, and their cost (a part of `amountUsd`). */
  webSearchRequests: number;
  webFetchRequests: number;
  serverToolUsd: string;
  createdAt: number;
  description: string;
  requestId: string | null;
  /** What a usage entry paid for (null once the request's record is past retention, and for other kinds). */
  usage: {
    requestId: string;
    model: string;
    inputTokens: number;
    outputTokens: number;
    cachedTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    cacheWrite1hTokens: number;
    keyName: string | null;
  } | null;
}

/** One tier, as the user can reach it: automatically by total paid, and/or bought for a period. */
export interface TierOption extends TierInfo {
  reachedAtTotalPaidUsd: string | null;
  priceUsd: string | null;
  periodDays: number | null;
  position: 'current' | 'below' | 'above';
}

export interface TierStatus {
  current: TierInfo;
  source: 'granted' | 'paid_total' | 'bought';
  bought: { tier: string; until: number; renews: boolean } | null;
  /** A bought tier whose renewal the balance could not pay, while the account is below it. */
  lapsedTier: string | null;
  paidTotalUsd: string;
  availableUsd: string;
  tiers: TierOption[];
}

export interface AdminAccount {
  id: string;
  email: string;
  role: Role;
  tier: string;
  disabled: boolean;
  balanceUsd: string;
  requests30d: number;
  costUsd30d: string;
  createdAt: number;
}

export interface UpstreamCredential {
  vendor: string;
  label: string;
  baseUrl: string;
  state: 'healthy' | 'cooling_down';
  coolingDownUntil: number | null;
  recentFailures: number;
  /** The operator's deployment the credential belongs to (null: the vendor's own credentials). */
  deployment: string | null;
  /** Its share of requests relative to the others serving the same models. */
  weight: number;
  /** Attempts since the gateway started, and how many failed. */
  attempts: number;
  failures: number;
  /** The last failure (`status_503`, `connect`, `timeout`, …) and when, epoch ms. */
  lastError: { reason: string; at: number } | null;
  /** Mean time to the upstream's answer of its successful attempts, ms (null before one). */
  meanLatencyMs: number | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** `GET /api/models`: a model the account may use, prices in USD per 1M tokens (exact decimal strings). */
export interface ModelInfo {
  id: string;
  family: string;
  description: string;
  contextWindow: number;
  maxOutputTokens: number;
  pricing: {
    inputUsd: string;
    outputUsd: string;
    cacheReadUsd: string;
    cacheWriteUsd: string;
    cacheWrite1hUsd: string;
    /** USD per web search, where the model searches and it is charged. */
    webSearchUsd: string | null;
  };
  capabilities: { tools: boolean; images: boolean; reasoning: boolean; structuredOutput: boolean };
}

/** `GET /api/standing`: why the API refuses this account's requests right now, if it does, and a lapsed tier. */
export interface Standing {
  refusing: { reason: 'no_credit'; freeTokensReturnAt: number | null } | null;
  /** A bought tier whose renewal the balance could not pay; `affordable`: the balance would pay for it now. */
  tierLapsed: { tier: string; currentTier: string; priceUsd: string; affordable: boolean } | null;
}

/** One audit log event, as `/api/audit` and the exports give it (docs/audit-log.md). */
export interface AuditEvent {
  id: string;
  organisation_id: string;
  created_at: string;
  actor: { type: 'person' | 'operator' | 'system'; id: string | null; email: string | null; key_id: string | null };
  ip: string | null;
  action: string;
  target: { type: string; id: string | null } | null;
  before: unknown;
  after: unknown;
}

export interface AuditFilter {
  action?: string | undefined;
  actor?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export interface BillingDetails {
  billingName: string | null;
  billingAddress: string | null;
}

/** Where a catalog entry comes from: the gateway's own list, tollgate.yaml, or the operator's stored edits. */
export type CatalogSource = 'built-in' | 'file' | 'database';

export type CatalogSection = 'models' | 'aliases' | 'deployments';

export interface CatalogModelEntry {
  id: string;
  family: string;
  description: string;
  upstreamModel: string;
  contextWindow: number;
  maxOutputTokens: number;
  pricing: { inputUsd: string; outputUsd: string; cacheReadUsd: string; cacheWriteUsd: string };
  deployments: string[];
  retired: boolean;
  replacement: string | null;
  source: CatalogSource;
  /** The stored entry, as tollgate.yaml would hold it (null: none stored). */
  stored: Record<string, unknown> | null;
  /** What an edit starts from: the stored entry, else tollgate.yaml's. */
  entry: Record<string, unknown> | null;
}

export interface CatalogAliasEntry {
  name: string;
  model: string;
  fallbacks: string[];
  source: CatalogSource;
}

/** A deployment; a stored one names the environment variables holding its keys, never a key. */
export interface CatalogDeploymentEntry {
  name: string;
  source: CatalogSource;
  family: string;
  baseUrl: string;
  apiKeyEnv?: string;
  [field: string]: unknown;
}

export interface CatalogView {
  revision: number;
  models: CatalogModelEntry[];
  aliases: CatalogAliasEntry[];
  deployments: CatalogDeploymentEntry[];
}
