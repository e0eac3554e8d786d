/**
 * Storage of what the identity services need (verified email, single-use links, the sessions list, account
 * deletion). Kept beside `types.ts`, like session-types.ts. Times are Unix epoch milliseconds.
 */

export type AccountTokenPurpose = 'verify_email' | 'reset_password';

export interface AccountTokenRecord {
  /** Hex SHA-256 of the token; the token itself is never stored. */
  idHash: string;
  purpose: AccountTokenPurpose;
  accountId: string;
  /** The address the link was sent to (for an email change: the new address it proves). */
  email: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

export interface EmailStatus {
  emailVerifiedAt: number | null;
  deletedAt: number | null;
}

/** One session as its owner sees it in the sessions list. */
export interface SessionDetails {
  idHash: string;
  createdAt: number;
  lastSeenAt: number;
  userAgent: string | null;
  ip: string | null;
}

export interface IdentityRepository {
  createToken(token: Omit<AccountTokenRecord, 'usedAt'>): Promise<void>;
  findToken(idHash: string): Promise<AccountTokenRecord | null>;
  /**
   * Marks the token used when it is unused and unexpired at `at`; true when this call did. One conditional update,
   * so of two concurrent uses of one link exactly one succeeds.
   */
  consumeToken(idHash: string, at: number): Promise<boolean>;
  /** Marks every unused token of the account for the purpose used: a newer link, or a finished reset, ends them. */
  revokeTokens(accountId: string, purpose: AccountTokenPurpose, at: number): Promise<void>;
  /** Null when there is no such account. */
  emailStatus(accountId: string): Promise<EmailStatus | null>;
  setEmailVerified(accountId: string, at: number | null): Promise<void>;
  /** Replaces the address with a proven one (verified at `at`); throws DuplicateEmailError when it is taken. */
  changeEmail(accountId: string, email: string, at: number): Promise<void>;
  /** Live sessions of the account, most recently used first. */
  listSessions(accountId: string): Promise<SessionDetails[]>;
  /** Admin accounts that are neither disabled nor deleted, other than `exceptId`. */
  countOtherActiveAdmins(exceptId: string): Promise<number>;
  /**
   * In one transaction: the email becomes `tombstone`, the password hash and sessions go, outstanding links are
   * used up, every active key is revoked, and the account is disabled and marked deleted. Ledger, usage and
   * balance rows are not touched.
   */
  deleteAccount(accountId: string, tombstone: string, at: number): Promise<void>;
}
