/**
 * Repository interfaces: what the services need from storage, with no SQL and no driver types.
 * Two implementations (SQLite and PostgreSQL) pass one contract suite (`storage-contract.test.ts`).
 * Times are Unix epoch milliseconds (number); ids are opaque strings.
 */

import type { BillingRepository } from './billing-types.js';

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
  name: string;
  /** Hex SHA-256 of the full key; the key itself is never stored. */
  keyHash: string;
  /** What the owner sees to recognise a key: `sk-tg-…abcd`. */
  hint: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export type NewApiKey = Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>;

/** A key with its owning account, as authentication needs it: one lookup, one round trip. */
export interface ApiKeyWithAccount {
  key: ApiKeyRecord;
  account: AccountRecord;
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
}

export interface ApiKeyRepository {
  create(key: NewApiKey): Promise<ApiKeyRecord>;
  findByHashWithAccount(keyHash: string): Promise<ApiKeyWithAccount | null>;
  findById(accountId: string, id: string): Promise<ApiKeyRecord | null>;
  /** All keys of the account, newest first, revoked ones included. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>;
  /** Revokes an active key of the account; false when there is no such active key. */
  revoke(accountId: string, id: string, at: number): Promise<boolean>;
  /**
   * In one transaction: revoke the active key `oldId` of the account and create `replacement`.
   * Null (and nothing changed) when `oldId` is not an active key of the account.
   */
  rotate(accountId: string, oldId: string, replacement: NewApiKey, at: number): Promise<ApiKeyRecord | null>;
  touchLastUsed(id: string, at: number): Promise<void>;
}

export interface UsageRepository {
  /** Newest first. */
  listByAccount(accountId: string, limit: number): Promise<UsageRecord[]>;
  /** Newest first, after the cursor (created_at and request id of the last row seen). */
  listPage(accountId: string, limit: number, cursor?: { createdAt: number; requestId: string }): Promise<UsageRecord[]>;
}

export interface Storage {
  readonly dialect: 'sqlite' | 'postgres';
  readonly accounts: AccountRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly usage: UsageRepository;
  readonly billing: BillingRepository;
  /** Applies pending migrations; safe to call from several processes at once. Returns the names applied. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}
