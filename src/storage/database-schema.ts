import type { ColumnType } from 'kysely';

/**
 * Kysely's view of the tables, shared by the SQLite and PostgreSQL implementations.
 * SQL names are snake_case; the repositories map rows to the camelCase records of `types.ts`.
 *
 * Conventions that keep one code path for both databases:
 * - times are epoch milliseconds in BIGINT columns (INTEGER affinity in SQLite), read back as JS numbers;
 * - booleans are INTEGER 0/1 in both, because SQLite has no boolean type and PostgreSQL's would
 *   need per-dialect literals and parsing;
 * - token counts and latency are INTEGER.
 */

export interface AccountsTable {
  id: string;
  /** As the user typed it; shown back to them. */
  email: string;
  /** `normalizeEmail(email)`; carries the unique index that makes emails case-insensitively unique. */
  email_normalized: string;
  password_hash: string;
  role: string;
  /** The person's sign-in switch; their personal organisation has its own (`organisations.disabled`). */
  disabled: number;
  created_at: number;
  /** When the address was proven (0013-identity-mail); null until then. */
  email_verified_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the person deleted the account; its row stays for the ledger, with a tombstone for an email. */
  deleted_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Nano-USD: bound as a decimal string, selected as text (see `money()` in money-sql.ts). */
export type MoneyColumn = ColumnType<string, string | undefined, string>;

export interface ApiKeysTable {
  id: string;
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  name: string;
  key_hash: string;
  hint: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  /** Migration 0007: space-separated scopes and model entries; NULL is all. */
  scopes: ColumnType<string | null, string | null | undefined, string | null>;
  models: ColumnType<string | null, string | null | undefined, string | null>;
  rate_limit_rpm: ColumnType<number | null, number | null | undefined, number | null>;
  rate_limit_tpm: ColumnType<number | null, number | null | undefined, number | null>;
  /** The person who created the key (0015-organisations); null for keys made before, or by the operator. */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** The project the key belongs to (0020-projects); every key has one, the column is nullable only for SQLite. */
  project_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface UsageRecordsTable {
  request_id: string;
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  api_key_id: string;
  model: string;
  family: string;
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  status: string;
  stream: number;
  latency_ms: number;
  created_at: number;
  raw_usage: string | null;
  cost_nano: MoneyColumn;
  free_tokens: ColumnType<number, number | undefined, number>;
  unbilled_nano: MoneyColumn;
  /** The client route the request came in on (migration 0005); null for older rows. */
  route: ColumnType<string | null, string | null | undefined, string | null>;
  /** Output the vendor produced after a refused slice, never delivered nor billed (0006). */
  unbilled_tokens: ColumnType<number, number | undefined, number>;
  /** The part of `cache_write_tokens` written for an hour (0009); 0 on older rows. */
  cache_write_1h_tokens: ColumnType<number, number | undefined, number>;
  /** Web searches and fetches the vendor ran, and their cost within `cost_nano` (0010); 0 on older rows. */
  web_search_requests: ColumnType<number, number | undefined, number>;
  web_fetch_requests: ColumnType<number, number | undefined, number>;
  server_tool_nano: MoneyColumn;
  /** The tokenizer's count of the prompt on rows that teach calibration (0012); null elsewhere. */
  local_input_tokens: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface ReservationsTable {
  request_id: string;
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  api_key_id: string;
  hold_nano: MoneyColumn;
  free_tokens: number;
  free_day: number;
  /** The output tokens granted so far (the hold grows a slice at a time). */
  max_output_tokens: number;
  created_at: number;
  expires_at: number;
  /** The checkpoint of what the request delivered (0006): null until its first output. */
  model: ColumnType<string | null, string | null | undefined, string | null>;
  family: ColumnType<string | null, string | null | undefined, string | null>;
  stream: ColumnType<number, number | undefined, number>;
  checkpoint_input_tokens: ColumnType<number, number | undefined, number>;
  checkpoint_cache_read_tokens: ColumnType<number, number | undefined, number>;
  checkpoint_cache_write_tokens: ColumnType<number, number | undefined, number>;
  /** The part of the checkpoint's cache writes written for an hour (0009). */
  checkpoint_cache_write_1h_tokens: ColumnType<number, number | undefined, number>;
  checkpoint_output_tokens: ColumnType<number, number | undefined, number>;
  checkpoint_at: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface LedgerEntriesTable {
  id: string;
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  kind: string;
  amount_nano: MoneyColumn;
  balance_after_nano: MoneyColumn;
  idempotency_key: string;
  request_id: string | null;
  note: string | null;
  created_at: number;
  /** Reported tokens a settlement could not charge, and their cost (0011-unbilled-usage). */
  unbilled_tokens: ColumnType<number | string, number | undefined, number>;
  unbilled_nano: MoneyColumn;
}

export interface RedemptionCodesTable {
  code_hash: string;
  amount_nano: MoneyColumn;
  created_at: number;
  /** The organisation credited (0016-organisation-wallets). */
  redeemed_by: string | null;
  redeemed_at: number | null;
  /** Null: never expires. */
  expires_at: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface SessionsTable {
  id_hash: string;
  account_id: string;
  created_at: number;
  last_seen_at: number;
  /** What the sessions list shows (0013-identity-mail); null on sessions started before. */
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  ip: ColumnType<string | null, string | null | undefined, string | null>;
  /** The organisation the session works in (0015-organisations); null: the person's first. */
  organisation_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** How the session started (0023): `password`, `second_factor`, `passkey`, `sso`; null: before, a password. */
  sign_in_method: ColumnType<string | null, string | null | undefined, string | null>;
  /** The SSO provider of an `sso` session. */
  sso_provider: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Who pays (0015-organisations); the wallet, the free allowance and the tier live on its row (0016). */
export interface OrganisationsTable {
  id: string;
  name: string;
  /** What receipts carry; null until an owner or billing member sets them. */
  billing_name: ColumnType<string | null, string | null | undefined, string | null>;
  billing_address: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: number;
  /** The tier requests are limited by: the highest of the next three (0008-tier-upgrades), kept in step with them. */
  tier: ColumnType<string, string | undefined, string>;
  /** The operator's tier (a floor). */
  granted_tier: ColumnType<string, string | undefined, string>;
  /**
   * A tier bought from the balance, and the end of its period (epoch ms). A tier with no end is one whose renewal the
   * balance could not pay (lapsed), kept so the dashboard can offer it again.
   */
  bought_tier: ColumnType<string | null, string | null | undefined, string | null>;
  bought_tier_until: ColumnType<number | null, number | null | undefined, number | null>;
  /** 1: renew from the balance at the end of the period; 0: lapse. */
  bought_tier_renews: ColumnType<number, number | undefined, number>;
  /** 1: requests with the organisation's keys are refused (the operator's switch). */
  disabled: ColumnType<number, number | undefined, number>;
  /** 1: members need a second factor, used by their session (0023). */
  require_second_factor: ColumnType<number, number | undefined, number>;
  /** Null, or the SSO provider ids (comma-separated) whose sessions alone reach the organisation (0023). */
  required_sso_providers: ColumnType<string | null, string | null | undefined, string | null>;
  /** Money columns are written as decimal strings and read through `money()`: never a JS number. */
  balance_nano: MoneyColumn;
  reserved_nano: MoneyColumn;
  free_day: ColumnType<number, number | undefined, number>;
  free_used_tokens: ColumnType<number, number | undefined, number>;
  free_reserved_tokens: ColumnType<number, number | undefined, number>;
}

/** A group of an organisation's keys with its own model allowlist (0020-projects). */
export interface ProjectsTable {
  id: string;
  organisation_id: string;
  name: string;
  /** Space-separated model ids and family names; null: every model. */
  models: string | null;
  created_at: number;
  archived_at: number | null;
}

/** A person's role in an organisation (0015-organisations). */
export interface OrganisationMembersTable {
  organisation_id: string;
  account_id: string;
  role: string;
  created_at: number;
  /** The SSO provider that added the member and keeps its role in step (0023); null: joined otherwise. */
  provisioned_by: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The audit log (0018-audit-log): append-only, one row per audited change. */
export interface AuditEventsTable {
  id: string;
  organisation_id: string;
  created_at: number;
  actor_type: string;
  actor_id: string | null;
  actor_email: string | null;
  actor_key_id: string | null;
  ip: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  before_json: string | null;
  after_json: string | null;
}

/** Invitations to an organisation (0017-organisation-invitations): the SHA-256 of the link's token, never the token. */
export interface OrganisationInvitationsTable {
  id: string;
  token_hash: string;
  organisation_id: string;
  email: string;
  email_normalized: string;
  role: string;
  invited_by: string;
  created_at: number;
  expires_at: number;
  accepted_at: ColumnType<number | null, number | null | undefined, number | null>;
  accepted_by: ColumnType<string | null, string | null | undefined, string | null>;
  revoked_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Single-use links sent by mail (0013-identity-mail): the SHA-256 of the token, never the token. */
export interface AccountTokensTable {
  id_hash: string;
  purpose: string;
  account_id: string;
  /** The address the link was sent to: for an email change, the new address it proves. */
  email: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface LoginFailuresTable {
  id: string;
  subject: string;
  failed_at: number;
}

/** Daily rollup of usage_records (migration 0004): one row per account, UTC day number, model and key. */
export interface UsageDailyTable {
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  /** UTC day number: epoch ms / 86,400,000. */
  day: number;
  model: string;
  api_key_id: string;
  requests: number;
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** The part of `cache_write_tokens` written for an hour (0009). */
  cache_write_1h_tokens: ColumnType<number, number | undefined, number>;
  output_tokens: number;
  reasoning_tokens: number;
  cost_nano: MoneyColumn;
  /** Reported tokens the day's settlements could not charge, and their cost (0011-unbilled-usage). */
  unbilled_tokens: ColumnType<number | string, number | undefined, number>;
  unbilled_nano: ColumnType<string | bigint, string | bigint | undefined, string | bigint>;
}

/** Stored Responses (migration 0005). */
export interface StoredResponsesTable {
  id: string;
  /** The organisation that pays (0016-organisation-wallets); the name stays from when accounts paid. */
  account_id: string;
  created_at: number;
  response: string;
  input_items: string;
}

/** Spend limits per period at three levels (0021-spend-limits). */
export interface SpendLimitsTable {
  id: string;
  organisation_id: string;
  scope: string;
  scope_id: string;
  period: string;
  limit_nano: ColumnType<string | number, string, string>;
  used_nano: ColumnType<string | number, string | undefined, string>;
  reserved_nano: ColumnType<string | number, string | undefined, string>;
  period_start: ColumnType<number | string, number | undefined, number>;
  created_at: number;
  updated_at: number;
}

/** What each reservation holds against each limit (0021-spend-limits). */
export interface SpendLimitHoldsTable {
  request_id: string;
  limit_id: string;
  hold_nano: ColumnType<string | number, string, string>;
}

export interface Database {
  accounts: AccountsTable;
  organisations: OrganisationsTable;
  organisation_members: OrganisationMembersTable;
  projects: ProjectsTable;
  audit_events: AuditEventsTable;
  organisation_invitations: OrganisationInvitationsTable;
  sessions: SessionsTable;
  account_tokens: AccountTokensTable;
  login_failures: LoginFailuresTable;
  api_keys: ApiKeysTable;
  usage_records: UsageRecordsTable;
  usage_daily: UsageDailyTable;
  reservations: ReservationsTable;
  spend_limits: SpendLimitsTable;
  spend_limit_holds: SpendLimitHoldsTable;
  ledger_entries: LedgerEntriesTable;
  redemption_codes: RedemptionCodesTable;
  stored_responses: StoredResponsesTable;
}

/**
 * Names of the unique indexes whose violation the repositories translate into domain errors.
 * The migrations create them under these names, so error detection and DDL cannot drift apart.
 */
export const ACCOUNTS_EMAIL_UNIQUE_INDEX = 'accounts_email_normalized_key';
export const API_KEYS_HASH_UNIQUE_INDEX = 'api_keys_key_hash_key';

/** Identifies a unique index both ways the drivers report it: by name (pg) or by table.column (SQLite). */
export interface UniqueIndexTarget {
  indexName: string;
  table: string;
  columns: readonly string[];
}

export const ACCOUNTS_EMAIL_UNIQUE: UniqueIndexTarget = {
  indexName: ACCOUNTS_EMAIL_UNIQUE_INDEX,
  table: 'accounts',
  columns: ['email_normalized'],
};

/** Per-driver test for "this error is a unique violation of that index". */
export type UniqueViolationDetector = (error: unknown, target: UniqueIndexTarget) => boolean;

/** Case-insensitive email identity. Lower-casing in JS (not SQL) keeps both databases identical. */
export function normalizeEmail(email: string): string {
  return email.toLowerCase();
}

/** 0/1 ⇄ boolean, in one place. */
export function toIntegerBoolean(value: boolean): number {
  return value ? 1 : 0;
}

export function fromIntegerBoolean(value: number): boolean {
  return value !== 0;
}
