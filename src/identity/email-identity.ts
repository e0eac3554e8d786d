import { hashPassword, verifyPassword } from '../accounts/password.js';
import { passwordRuleViolation } from '../accounts/password-rules.js';
import type { SessionClient, SessionService } from '../accounts/session-service.js';
import { invalidRequest } from '../canonical/errors.js';
import { normalizeEmail } from '../storage/database-schema.js';
import type { IdentityRepository } from '../storage/identity-types.js';
import type { LoginFailureRepository } from '../storage/session-types.js';
import { DuplicateEmailError, type AccountRecord, type AccountRepository } from '../storage/types.js';
import { AccountLinks, LINK_LIFETIME_MS } from './account-links.js';
import { IdentityError, mailNotConfigured } from './identity-error.js';
import { resetMail, verificationMail } from './mail-messages.js';
import { MailThrottle, type MailThrottleSettings } from './mail-throttle.js';
import type { Mailer } from './mailer.js';
import { safeRedirectPath } from './safe-redirect.js';

// The same rule the account service applies at registration: no spaces and no control characters.
export const EMAIL_PATTERN = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

/** Where mail that is sent after the reply went out reports a failure (the request's logger). */
export type ReportFailure = (error: unknown, what: string) => void;

export interface EmailIdentityOptions {
  accounts: AccountRepository;
  identity: IdentityRepository;
  sessions: SessionService;
  /** The rolling-window table the throttles share. */
  throttleRows: LoginFailureRepository;
  /** Absent: the gateway sends no mail (the operator verifies and issues reset links instead). */
  mailer: Mailer | undefined;
  /** PUBLIC_BASE_URL: links in mail are built from it (never from a request's Host header). */
  publicBaseUrl: string | undefined;
  /** REQUIRE_VERIFIED_EMAIL as resolved by the configuration. */
  requireVerifiedEmail: boolean;
  /** Whether the account has a second factor: then a reset starts no session, its sign-in asks for the factor. */
  hasSecondFactor?: (accountId: string) => Promise<boolean>;
  now?: () => number;
  throttle?: MailThrottleSettings;
}

/** What the dashboard shows about the signed-in person's address. */
export interface EmailState {
  email: string;
  emailVerified: boolean;
  /** Keys cannot be created until the address is verified. */
  verificationRequired: boolean;
  mailConfigured: boolean;
}

/** A link the operator hands over themselves (no mail configured): its path, and the full URL when known. */
export interface OperatorLink {
  path: string;
  url: string | null;
  expiresAt: number;
}

/**
 * Verified addresses and password resets through single-use links sent by mail (docs/accounts.md).
 *
 * Whether an address has an account is never told by an answer: a reset request is throttled, answered, and
 * only then (after the reply) looks the address up and sends the mail, so the reply and its timing are the same
 * for any address. An email change is answered the same whether the new address is free or taken.
 */
export class EmailIdentity {
  readonly links: AccountLinks;
  private readonly throttle: MailThrottle;
  private readonly now: () => number;

  constructor(private readonly options: EmailIdentityOptions) {
    this.now = options.now ?? Date.now;
    this.links = new AccountLinks(options.identity, this.now);
    this.throttle = new MailThrottle(options.throttleRows, options.throttle, this.now);
  }

  get mailConfigured(): boolean {
    return this.options.mailer !== undefined;
  }

  async state(account: AccountRecord): Promise<EmailState> {
    const status = await this.options.identity.emailStatus(account.id);
    return {
      email: account.email,
      emailVerified: status?.emailVerifiedAt != null,
      verificationRequired: this.options.requireVerifiedEmail,
      mailConfigured: this.mailConfigured,
    };
  }

  /** Null when the account may create keys; otherwise the sentence that says why not. */
  async keyCreationRefusal(account: AccountRecord): Promise<string | null> {
    if (!this.options.requireVerifiedEmail) return null;
    const status = await this.options.identity.emailStatus(account.id);
    if (status?.emailVerifiedAt != null) return null;
    return `Verify your email address before creating API keys: open the link sent to ${account.email}, or ask for a new one from the banner at the top of the dashboard.`;
  }

  /** After registration: the verification link, sent once the reply is on its way. */
  afterRegistration(account: AccountRecord, report: ReportFailure): void {
    if (this.options.mailer === undefined) return;
    this.inBackground(() => this.sendVerification(account.id, account.email), report, 'verification mail');
  }

  /** Another verification link to the current address, for the signed-in person. */
  async resendVerification(account: AccountRecord, ip: string): Promise<void> {
    if (this.options.mailer === undefined) throw mailNotConfigured('addresses cannot be verified');
    const status = await this.options.identity.emailStatus(account.id);
    if (status?.emailVerifiedAt != null) throw invalidRequest('This email address is already verified.');
    await this.throttle.admit(account.email, ip);
    await this.sendVerification(account.id, account.email);
  }

  /** "Forgot password?": the same answer for any address, known or not; the mail goes out afterwards. */
  async requestPasswordReset(
    email: string,
    ip: string,
    next: string | undefined,
    report: ReportFailure,
  ): Promise<void> {
    const returnTo = safeRedirectPath(next);
    if (this.options.mailer === undefined) throw mailNotConfigured('passwords cannot be reset');
    const address = email.trim();
    if (!EMAIL_PATTERN.test(address) || address.length > 254)
      throw invalidRequest(`'${email}' is not a valid email address.`, 'email');
    await this.throttle.admit(address, ip);
    this.inBackground(
      async () => {
        const account = await this.options.accounts.findByEmail(address);
        if (account === null || account.disabled) return;
        const token = await this.links.issue('reset_password', account.id, account.email);
        await this.options.mailer!.send(resetMail(account.email, this.linkUrl('/reset-password', token, returnTo)));
      },
      report,
      'password reset mail',
    );
  }

  /**
   * Sets a new password from a reset link: every session of the account ends and a new one starts for the
   * person who reset. A password that breaks the rules is refused before the link is used up.
   */
  async resetPassword(
    token: string,
    newPassword: string,
    client: SessionClient,
  ): Promise<{ account: AccountRecord; sessionToken: string | null }> {
    const link = await this.links.check(token, 'reset_password');
    const account = await this.options.accounts.findById(link.accountId);
    if (account === null || account.disabled)
      throw new IdentityError(400, 'invalid_link', 'This link is not valid.', 'token');
    const violation = passwordRuleViolation(newPassword, account.email, 'newPassword');
    if (violation !== null) throw violation;
    const hash = await hashPassword(newPassword);
    await this.links.consume(link);
    await this.options.accounts.setPasswordHash(account.id, hash);
    await this.options.sessions.endAll(account.id);
    const at = this.now();
    await this.options.identity.revokeTokens(account.id, 'reset_password', at);
    // Following the link proved the address the mail went to, when it is still the account's.
    if (normalizeEmail(link.email) === normalizeEmail(account.email)) await this.markVerifiedIfNot(account.id, at);
    const updated = { ...account, passwordHash: hash };
    // The second factors stay as they were: the new password signs in only together with one of them.
    if ((await this.options.hasSecondFactor?.(account.id)) === true) return { account: updated, sessionToken: null };
    const sessionToken = await this.options.sessions.start(account.id, client);
    return { account: updated, sessionToken };
  }

  /** A verification link: proves the current address, or (sent to a new one) makes the new address the account's. */
  async verifyEmail(token: string): Promise<AccountRecord> {
    const link = await this.links.check(token, 'verify_email');
    const account = await this.options.accounts.findById(link.accountId);
    if (account === null || account.disabled)
      throw new IdentityError(400, 'invalid_link', 'This link is not valid.', 'token');
    const changing = normalizeEmail(link.email) !== normalizeEmail(account.email);
    if (changing && (await this.options.accounts.findByEmail(link.email)) !== null)
      throw new IdentityError(409, 'email_taken', 'Another account uses this address now: the change cannot be made.');
    await this.links.consume(link);
    const at = this.now();
    if (!changing) {
      await this.options.identity.setEmailVerified(account.id, at);
      return account;
    }
    try {
      await this.options.identity.changeEmail(account.id, link.email, at);
    } catch (error) {
      if (error instanceof DuplicateEmailError)
        throw new IdentityError(
          409,
          'email_taken',
          'Another account uses this address now: the change cannot be made.',
        );
      throw error;
    }
    await this.options.identity.revokeTokens(account.id, 'verify_email', at);
    // A reset link sent to the old address must not outlive the change.
    await this.options.identity.revokeTokens(account.id, 'reset_password', at);
    return { ...account, email: link.email };
  }

  /**
   * Asks to move the account to `newEmail`: with the password, a link to the new address, which takes effect
   * only when followed. The answer is the same whether the new address is free or already has an account.
   */
  async requestEmailChange(
    account: AccountRecord,
    newEmail: string,
    password: string,
    ip: string,
    report: ReportFailure,
  ): Promise<void> {
    if (this.options.mailer === undefined) throw mailNotConfigured('a new address cannot be confirmed');
    const address = newEmail.trim();
    if (!EMAIL_PATTERN.test(address) || address.length > 254)
      throw invalidRequest(`'${newEmail}' is not a valid email address.`, 'newEmail');
    if (normalizeEmail(address) === normalizeEmail(account.email))
      throw invalidRequest('This is already the address of your account.', 'newEmail');
    if (!(await verifyPassword(password, account.passwordHash)))
      throw invalidRequest('The password is not correct.', 'password');
    await this.throttle.admit(address, ip);
    this.inBackground(
      async () => {
        if ((await this.options.accounts.findByEmail(address)) !== null) return;
        await this.sendVerification(account.id, address);
      },
      report,
      'email change mail',
    );
  }

  /** The operator vouches for the account's current address (no mail configured, or mail lost). */
  async operatorVerify(accountId: string): Promise<void> {
    await this.markVerifiedIfNot(accountId, this.now());
  }

  /** A reset link for the operator to pass on themselves; earlier reset links of the account stop working. */
  async operatorResetLink(account: AccountRecord): Promise<OperatorLink> {
    const token = await this.links.issue('reset_password', account.id, account.email);
    const path = `/reset-password?token=${token}`;
    const base = this.options.publicBaseUrl;
    return {
      path,
      url: base === undefined ? null : `${base}${path}`,
      expiresAt: this.now() + LINK_LIFETIME_MS.reset_password,
    };
  }

  private async markVerifiedIfNot(accountId: string, at: number): Promise<void> {
    const status = await this.options.identity.emailStatus(accountId);
    if (status !== null && status.emailVerifiedAt === null) await this.options.identity.setEmailVerified(accountId, at);
  }

  private async sendVerification(accountId: string, address: string): Promise<void> {
    const token = await this.links.issue('verify_email', accountId, address);
    await this.options.mailer!.send(verificationMail(address, this.linkUrl('/verify-email', token, undefined)));
  }

  private linkUrl(path: string, token: string, next: string | undefined): string {
    // With mail configured the configuration guarantees PUBLIC_BASE_URL.
    const base = this.options.publicBaseUrl ?? '';
    const query = new URLSearchParams({ token });
    if (next !== undefined) query.set('next', next);
    return `${base}${path}?${query.toString()}`;
  }

  private inBackground(work: () => Promise<void>, report: ReportFailure, what: string): void {
    work().catch((error: unknown) => report(error, what));
  }
}
