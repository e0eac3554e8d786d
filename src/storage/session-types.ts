/**
 * Storage of dashboard sessions and failed logins. Kept beside `types.ts` (not in it) so the dashboard's
 * storage needs stay in one place. Times are Unix epoch milliseconds.
 */
import type { Membership } from './organisation-types.js';
import type { AccountRecord } from './types.js';

export interface SessionRecord {
  /** Hex SHA-256 of the cookie token; the token itself is never stored. */
  idHash: string;
  accountId: string;
  createdAt: number;
  lastSeenAt: number;
  /** The browser's User-Agent and the client address at login, for the sessions list (absent: not recorded). */
  userAgent?: string | null;
  ip?: string | null;
  /** The organisation the session works in (absent or null: the person's first). */
  organisationId?: string | null;
  /** How the session started (absent: a password alone); `ssoProvider` names the provider of an `sso` one. */
  signInMethod?: SignInMethod;
  ssoProvider?: string | null;
}

/**
 * How a session started: a password alone, a password and a second factor (authenticator code, recovery code or
 * passkey), a passkey alone (which verifies the person, so stands for both), or single sign-on.
 */
export const SIGN_IN_METHODS = ['password', 'second_factor', 'passkey', 'sso'] as const;
export type SignInMethod = (typeof SIGN_IN_METHODS)[number];

export interface SessionWithAccount {
  session: SessionRecord;
  account: AccountRecord;
  /**
   * The organisation the session works in, read with the session on every request (so a member removed or
   * demoted loses access on their next request, on every instance): the session's choice while the person is
   * still a member of it, their oldest membership otherwise; null when they belong to none.
   */
  membership: Membership | null;
}

export interface SessionRepository {
  create(session: SessionRecord): Promise<void>;
  /** The session, its account and its organisation in one round trip; null when there is no such session. */
  findWithAccount(idHash: string): Promise<SessionWithAccount | null>;
  touch(idHash: string, at: number): Promise<void>;
  /** Records that the session proved a second factor after it started (the person enrolled one in it). */
  setSignInMethod(idHash: string, method: SignInMethod): Promise<void>;
  delete(idHash: string): Promise<void>;
  /** Ends every session of the account except `keepIdHash` (when given); returns how many ended. */
  deleteByAccount(accountId: string, keepIdHash?: string): Promise<number>;
  /** Deletes sessions idle since before `idleBefore` or created before `createdBefore`. */
  deleteExpired(idleBefore: number, createdBefore: number): Promise<number>;
}

/**
 * Login attempts per subject (`email:…`, `ip:…`). An attempt is written before its password is checked and
 * removed if it succeeds, so concurrent guesses see each other and the rows left are the failures.
 */
export interface LoginFailureRepository {
  /** One row per subject; returns their ids. */
  record(subjects: readonly string[], at: number): Promise<string[]>;
  /** The subject's rows at or after `since`, newest first, at most `limit`. */
  recent(subject: string, since: number, limit: number): Promise<Array<{ id: string; failedAt: number }>>;
  deleteIds(ids: readonly string[]): Promise<void>;
  clear(subject: string): Promise<void>;
  /** Forgets rows older than `before`. */
  prune(before: number): Promise<number>;
}
