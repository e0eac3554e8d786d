import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionRepository, SessionWithAccount, SignInMethod } from '../storage/session-types.js';

/** A session idle this long ends (docs/dashboard-api.md). */
export const SESSION_IDLE_MS = 7 * 86_400_000;
/** Any session ends this long after login, however active. */
export const SESSION_MAX_AGE_MS = 30 * 86_400_000;
/** `last_seen_at` is written at most this often per session: a write per dashboard request would be waste. */
const TOUCH_INTERVAL_MS = 5 * 60_000;

/** What the sessions list shows of the device a session was started from. */
export interface SessionClient {
  userAgent?: string | undefined;
  ip?: string | undefined;
}

/** How a session started, which organisations' sign-in policies read (default: a password alone). */
export interface SessionSignIn {
  method: SignInMethod;
  /** The provider of an `sso` session. */
  ssoProvider?: string;
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Dashboard sessions, stored in the database so they survive restarts and work on every instance.
 *
 * The cookie holds a random 256-bit token; storage keeps only its SHA-256. The CSRF token is derived from the
 * cookie's token (a hash with its own label), so it is bound to the session, needs no storage, and changes
 * whenever the session token does. A visitor who is not logged in gets a token too (not stored): that is
 * what binds the CSRF token of the login and registration forms, so a forged cross-site login fails as well.
 */
export class SessionService {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** A fresh token for a visitor (stored only once someone logs in with it: see `start`). */
  newToken(): string {
    return randomBytes(32).toString('base64url');
  }

  /** Whether the text could be a token this service issued (cookies are user input). */
  static isToken(text: string | undefined): text is string {
    return text !== undefined && TOKEN_PATTERN.test(text);
  }

  /** A new session for the account under a new token: the id always changes on login (no session fixation). */
  async start(
    accountId: string,
    client: SessionClient = {},
    signIn: SessionSignIn = { method: 'password' },
  ): Promise<string> {
    const token = this.newToken();
    const at = this.now();
    await this.sessions.create({
      idHash: hashToken(token),
      accountId,
      createdAt: at,
      lastSeenAt: at,
      userAgent: client.userAgent ?? null,
      ip: client.ip ?? null,
      signInMethod: signIn.method,
      ssoProvider: signIn.ssoProvider ?? null,
    });
    // Opportunistic clean-up: logins are rare enough to carry it, and the index makes it cheap.
    await this.sessions.deleteExpired(at - SESSION_IDLE_MS, at - SESSION_MAX_AGE_MS);
    return token;
  }

  /**
   * The live session behind a token and its account, or null. Expired sessions, and every session of a
   * disabled account, are deleted on sight.
   */
  async resolve(token: string): Promise<SessionWithAccount | null> {
    const idHash = hashToken(token);
    const found = await this.sessions.findWithAccount(idHash);
    if (found === null) return null;
    const at = this.now();
    if (found.session.lastSeenAt <= at - SESSION_IDLE_MS || found.session.createdAt <= at - SESSION_MAX_AGE_MS) {
      await this.sessions.delete(idHash);
      return null;
    }
    if (found.account.disabled) {
      await this.sessions.deleteByAccount(found.account.id);
      return null;
    }
    if (at - found.session.lastSeenAt >= TOUCH_INTERVAL_MS) await this.sessions.touch(idHash, at);
    return found;
  }

  /**
   * The person proved a second factor inside this session (set one up with a code or a passkey): a password-only
   * session now counts as a two-step one. Other methods are already as strong and are left as they are.
   */
  async provedSecondFactor(token: string, current: SignInMethod): Promise<void> {
    if (current === 'password') await this.sessions.setSignInMethod(hashToken(token), 'second_factor');
  }

  async end(token: string): Promise<void> {
    await this.sessions.delete(hashToken(token));
  }

  /** Ends the session stored under this hash (the sessions list names sessions without their tokens). */
  async endByHash(idHash: string): Promise<void> {
    await this.sessions.delete(idHash);
  }

  /** Every session of the account but the one with `keepToken`. */
  async endOthers(accountId: string, keepToken: string): Promise<number> {
    return this.sessions.deleteByAccount(accountId, hashToken(keepToken));
  }

  async endAll(accountId: string): Promise<number> {
    return this.sessions.deleteByAccount(accountId);
  }

  /** The CSRF token bound to a session token. */
  static csrfTokenFor(token: string): string {
    return createHash('sha256').update(`tollgate-csrf\0${token}`, 'utf8').digest('base64url');
  }

  /** Constant-time: the presented CSRF token against the one bound to the session token. */
  static csrfMatches(token: string, presented: string | undefined): boolean {
    if (presented === undefined) return false;
    const expected = Buffer.from(SessionService.csrfTokenFor(token), 'utf8');
    const given = Buffer.from(presented, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/** The stored id of a session token (its SHA-256, hex). */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
