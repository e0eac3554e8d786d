/**
 * Repository interfaces: what the services need from storage, with no SQL and no driver types.
 * Two implementations (SQLite and PostgreSQL) pass one contract suite (`storage-contract.test.ts`).
 * Times are Unix epoch milliseconds (number); ids are opaque strings.
 */

import type { KeyPermissions, KeySpendCounters } from './key-permission-types.js';
import type { BillingRepository } from './billing-types.js';
import type { LoginFailureRepository, SessionRepository } from './session-types.js';
import type { StoredResponseRepository } from './stored-response-types.js';

export type AccountRole = 'user' | 'admin';

export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string;
  role: AccountRole;
  tier: string;
  disabled: boolean;
  createdAt: number;
}

export interface NewAccount {
  id: string;
  email: string;
  passwordHash: string;
  role: AccountRole;
  tier: string;
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  /** The person who created the key (null: the operator, or unknown). */
  createdBy: string | null;
  /** The project the key belongs to (0020-projects), one of its organisation's. */
  projectId: string;
  name: string;
  /** Hex SHA-256 of the full key; the key itself is never stored. */
  keyHash: string;
  /** What the owner sees to recognise a key: `sk-tg-…abcd`. */
  hint: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /**
   * Scopes, model allowlist, spend and rate limits (docs/architecture.md#key-scopes-and-limits); `FULL_PERMISSIONS` for
   * a standard key.
   */
  permissions: KeyPermissions;
  /**
   * The counters of `permissions.spendLimit` as last written (see `currentPeriodSpend` for the current period's);
   * zero without one.
   */
  spend: KeySpendCounters;
  /**
   * Every spend limit of the key itself, one per period (docs/billing.md#spend-limits), day first; its project's and
   * organisation's are listed by the spend-limit repository. `permissions.spendLimit` is the first of these.
   */
  limits: import('./key-permission-types.js').KeyLimit[];
}

export type NewApiKey = Omit<
  ApiKeyRecord,
  'revokedAt' | 'lastUsedAt' | 'spend' | 'permissions' | 'createdBy' | 'projectId' | 'limits'
> & {
  /** Omitted: null (the operator, or unknown). */
  createdBy?: string | null;
  /** Omitted: the organisation's default project. */
  projectId?: string;
  /** The key's spend limits, one per period; omitted: `permissions.spendLimit` alone. */
  limits?: readonly import('./key-permission-types.js').KeySpendLimit[];
  /** Omitted: a standard key (`FULL_PERMISSIONS`). */
  permissions?: KeyPermissions;
};

/** A change to a key: only the fields given change. */
export interface ApiKeyChange {
  name?: string;
  expiresAt?: number | null;
  scopes?: KeyPermissions['scopes'];
  models?: KeyPermissions['models'];
  /**
   * The key's one spend limit, as before keys had several: its period's limit set, the key's other periods' cleared;
   * null clears them all. A new limit starts from the key's settled spend of the current period.
   */
  spendLimit?: KeyPermissions['spendLimit'];
  /** Every spend limit of the key, one per period: those not listed are cleared. */
  limits?: readonly import('./key-permission-types.js').KeySpendLimit[];
  rateLimit?: KeyPermissions['rateLimit'];
}

/** What authentication needs of the organisation a key belongs to: who pays, at which tier, and whether it may. */
export interface KeyOrganisation {
  id: string;
  name: string;
  /** The tier the key's requests are limited by. */
  tier: string;
  /** Set by the operator: every request with the organisation's keys is refused. */
  disabled: boolean;
}

/** What authentication needs of the project a key belongs to: whether it still works, and which models it allows. */
export interface KeyProject {
  id: string;
  /** The project's model allowlist (ids and family names); null: every model. A key's own list narrows it further. */
  models: string[] | null;
  /** Set: the project is archived and its keys are refused. */
  archivedAt: number | null;
}

/** A key with the organisation that owns it, as authentication needs it: one lookup, one round trip. */
export interface ApiKeyWithOrganisation {
  key: ApiKeyRecord;
  organisation: KeyOrganisation;
  project: KeyProject;
  /**
   * The organisation's money as read with the key, without a lock, where the storage reads it in the same round
   * trip: a starting point for admission (ReserveInput.accountHint), never a decision by itself.
   */
  money?: AccountMoneySnapshot;
}

/** A wallet's money and free-allowance counters at one moment (the organisation's row). */
export interface AccountMoneySnapshot {
  balance: bigint;
  reserved: bigint;
  /** UTC day number the free counters belong to. */
  freeDay: number;
  freeUsed: number;
  freeReserved: number;
}

export interface UsageRecord {
  /** The gateway's request id; unique, so a request is recorded at most once. */
  requestId: string;
  accountId: string;
  apiKeyId: string;
  model: string;
  family: string;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour (0 on rows recorded before the split was kept). */
  cacheWrite1hTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** `ok`, `client_disconnected`, `upstream_error`, … */
  status: string;
  stream: boolean;
  latencyMs: number;
  createdAt: number;
  /** The vendor's own usage object as JSON text, for audit. */
  rawUsage: string | null;
  /** What the request cost the account (filled at settlement). */
  costNano: bigint;
  /** Tokens covered by the free daily allowance. */
  freeTokens: number;
  /** Cost the balance could not cover (the vendor's count exceeded the reservation's estimate). */
  unbilledNano: bigint;
  /** The client route the request came in on (`/v1/responses`, …); absent on rows settled before it was kept. */
  route?: string;
  /** Output the vendor produced after a refused slice and before the upstream closed: never delivered, never billed. */
  unbilledTokens?: number;
  /** Web searches the vendor ran for the reply, billed per search (absent: none). */
  webSearchRequests?: number;
  /** Web fetches the vendor ran for the reply. */
  webFetchRequests?: number;
  /** What those searches and fetches cost at the model's prices: a part of `costNano` (absent: nothing). */
  serverToolNano?: bigint;
  /**
   * The tokenizer's count of the prompt, kept only when the request teaches calibration (the vendor reported its
   * usage and admission counted the prompt): a sample of the vendor-to-local ratio for the next start-up.
   */
  localInputTokens?: number;
}

/**
 * A text value holding U+0000 (NUL), which PostgreSQL cannot store: refused by both backends alike, before the
 * query runs (storage/refuse-nul-text-plugin.ts).
 */
export class TextWithNulError extends Error {
  constructor() {
    super('Text with a NUL character (U+0000) cannot be stored.');
    this.name = 'TextWithNulError';
  }
}

export class DuplicateEmailError extends Error {
  constructor(email: string) {
    super(`An account with email ${email} already exists.`);
    this.name = 'DuplicateEmailError';
  }
}

export interface AccountRepository {
  /** Throws DuplicateEmailError when the (case-insensitive) email is taken. */
  create(account: NewAccount): Promise<AccountRecord>;
  findById(id: string): Promise<AccountRecord | null>;
  /** Case-insensitive. */
  findByEmail(email: string): Promise<AccountRecord | null>;
  /** Changes the account's rate-limit tier; false when there is no such account. */
  setTier(id: string, tier: string): Promise<boolean>;
  /** Disables or re-enables the account; false when there is no such account. */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
  /** Replaces the password hash; false when there is no such account. */
  setPasswordHash(id: string, passwordHash: string): Promise<boolean>;
  /**
   * Operator list, by normalised email: accounts whose email contains `query` (case-insensitive), after
   * `afterEmail` (the normalised email of the last row of the previous page), with their settled balance.
   */
  listWithBalances(options: { query?: string; limit: number; afterEmail?: string }): Promise<AccountWithBalance[]>;
}

export interface AccountWithBalance extends AccountRecord {
  balanceNano: bigint;
}

export interface ApiKeyRepository {
  create(key: NewApiKey): Promise<ApiKeyRecord>;
  findByHashWithOrganisation(keyHash: string): Promise<ApiKeyWithOrganisation | null>;
  findById(accountId: string, id: string): Promise<ApiKeyRecord | null>;
  /** All keys of the account, newest first, revoked ones included. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>;
  /** Revokes an active key of the account; false when there is no such active key. */
  revoke(accountId: string, id: string, at: number): Promise<boolean>;
  /**
   * In one transaction: revoke the active key `oldId` of the account and create `replacement` (in the old key's
   * project when it names none).
   * Null (and nothing changed) when `oldId` is not an active key of the account.
   */
  rotate(accountId: string, oldId: string, replacement: NewApiKey, at: number): Promise<ApiKeyRecord | null>;
  touchLastUsed(id: string, at: number): Promise<void>;
  /**
   * Changes an active key of the account, in one transaction under the wallet row's lock (the spend counters are
   * written by admission and settlement under the same lock). Null when there is no such active key.
   */
  update(accountId: string, id: string, change: ApiKeyChange, at: number): Promise<ApiKeyRecord | null>;
}

/** One account's usage on one UTC day for one model and key, summed (from the daily rollup). */
export interface DailyUsageRow {
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  model: string;
  apiKeyId: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  reasoningTokens: number;
  costNano: bigint;
  /** Reported tokens no free allowance, balance or key limit could pay, and their cost at list price. */
  unbilledTokens: number;
  unbilledNano: bigint;
}

/** One settled request's prompt as the vendor counted it and as the tokenizer did (usage_records.local_input_tokens). */
export interface CalibrationSample {
  model: string;
  family: string;
  localInputTokens: number;
  /** Uncached input, cache reads and cache writes: every prompt token the vendor counted. */
  vendorInputTokens: number;
}

/** A settled request as the reconcile reads it: its usage record's figures and its ledger usage line. */
export interface ReconcileRecord {
  requestId: string;
  accountId: string;
  model: string;
  createdAt: number;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  outputTokens: number;
  freeTokens: number;
  /** The record's unbilled tokens: the split's, plus output produced past a refused slice. */
  unbilledTokens: number;
  costNano: bigint;
  unbilledNano: bigint;
  serverToolNano: bigint;
  /** The ledger line keyed `usage:<request id>`; null when the settlement wrote none. */
  ledger: { amountNano: bigint; unbilledTokens: number; unbilledNano: bigint } | null;
}

/** Usage of one account over a range of days, summed (operator view). */
export interface AccountUsageTotals {
  accountId: string;
  requests: number;
  tokens: number;
  costNano: bigint;
}

export interface UsageRepository {
  /** Rolled-up usage of the account for the UTC days `fromDay` … `toDay` (inclusive, `YYYY-MM-DD`), any order. */
  dailyTotals(accountId: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]>;
  /** Usage of every account with any in the range, summed per account (rollup). */
  totalsByAccount(fromDay: string, toDay: string): Promise<AccountUsageTotals[]>;
  /** Newest first. */
  listByAccount(accountId: string, limit: number): Promise<UsageRecord[]>;
  /** Newest first, after the cursor (created_at and request id of the last row seen). */
  listPage(
    accountId: string,
    limit: number,
    cursor?: { createdAt: number; requestId: string },
    filter?: { apiKeyId?: string | undefined; model?: string | undefined; projectId?: string | undefined },
  ): Promise<UsageRecord[]>;
  /** Which of these request ids have a usage record (are settled): what `ledger verify` asks of journal entries. */
  recordedRequestIds(requestIds: readonly string[]): Promise<Set<string>>;
  /** The account's usage records of these request ids (those retention has not deleted): what ledger rows describe. */
  findByRequestIds(accountId: string, requestIds: readonly string[]): Promise<UsageRecord[]>;
  /**
   * The calibration samples among the `scan` latest usage records (the created_at index, newest first; a bounded read
   * at start-up whatever the table's size), oldest first: what a starting gateway seeds its prompt calibration with.
   */
  calibrationSamples(scan: number): Promise<CalibrationSample[]>;
  /**
   * One page of the reconcile (`tollgate ledger reconcile`): every account's usage records created in
   * [`fromMs`, `toMs`), oldest first after the cursor, each with its ledger usage line (null: none).
   */
  reconcilePage(
    fromMs: number,
    toMs: number,
    limit: number,
    cursor?: { createdAt: number; requestId: string },
  ): Promise<ReconcileRecord[]>;
  /**
   * Retention: deletes at most `limit` per-request rows created before `cutoff` (epoch ms) and returns how many.
   * The daily rollup is untouched. Safe to run from several instances at once.
   */
  deleteRecordedBefore(cutoff: number, limit: number): Promise<number>;
}

export interface Storage {
  readonly dialect: 'sqlite' | 'postgres';
  readonly accounts: AccountRepository;
  /** Organisations, members and the session's organisation (0015-organisations). */
  readonly organisations: import('./organisation-types.js').OrganisationRepository;
  /** Projects: groups of an organisation's keys with their own model allowlist (0020-projects). */
  readonly projects: import('./project-types.js').ProjectRepository;
  /** The audit log, append-only (0018-audit-log). */
  readonly audit: import('./audit-types.js').AuditRepository;
  /** Ledger entries as receipts print them. */
  readonly receipts: import('./audit-types.js').ReceiptRepository;
  /** Invitations to join an organisation (0017-organisation-invitations). */
  readonly organisationInvitations: import('./organisation-invitation-types.js').OrganisationInvitationRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly usage: UsageRepository;
  readonly billing: BillingRepository;
  /** Spend limits per period of organisations, projects and keys (0021-spend-limits). */
  readonly spendLimits: import('./spend-limit-types.js').SpendLimitRepository;
  readonly sessions: SessionRepository;
  readonly loginFailures: LoginFailureRepository;
  /** Verified email, single-use links, the sessions list and account deletion (0013-identity-mail). */
  readonly identity: import('./identity-types.js').IdentityRepository;
  /** Stored Responses of `POST /v1/responses`. */
  readonly responses: StoredResponseRepository;
  /** Self-serve tier upgrades: what an account's tier is made of, purchases and renewals (0008-tier-upgrades). */
  readonly tierUpgrades: import('./tier-repository.js').TierRepository;
  /** TOTP, recovery codes, passkeys, sign-in challenges and SSO links (0014-identity-factors). */
  readonly identityFactors: import('./identity-factor-types.js').IdentityFactorRepository;
  /** Usage in export order, and the export sinks' cursors over it (0019-usage-export-cursors). */
  readonly usageExport: import('./usage-export-types.js').UsageExportRepository;
  /** The operator's catalog edits and their revisions (0024-catalog-entries). */
  readonly catalog: import('./catalog-entry-types.js').CatalogEntryRepository;
  /** Budget alert rules, their firings and deliveries (0022-budget-alerts). */
  readonly alerts: import('./alert-types.js').AlertRepository;
  /** Applies pending migrations; safe to call from several processes at once. Returns the names applied. */
  migrate(): Promise<string[]>;
  /** One trivial round trip (readiness probe); rejects when the database cannot answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
