import { createHash } from 'node:crypto';
import { DEFAULT_LOGIN_THROTTLE, waitInWords } from '../accounts/login-throttle.js';
import { IdentityError } from './identity-error.js';
import { normalizeEmail } from '../storage/database-schema.js';
import type { LoginFailureRepository } from '../storage/session-types.js';

export interface MailThrottleSettings {
  /** Mails asked for one address within the window (any client). */
  maxPerEmail: number;
  /** Mails asked for from one client IP within the window (any address). */
  maxPerIp: number;
}

export const DEFAULT_MAIL_THROTTLE: MailThrottleSettings = { maxPerEmail: 3, maxPerIp: 10 };

/** The login throttle's window: the rows share its table, which a successful login prunes past that window. */
const WINDOW_MS = DEFAULT_LOGIN_THROTTLE.windowMs;

export class TooManyMailRequestsError extends IdentityError {
  constructor(retryAfterSeconds: number) {
    super(
      429,
      'too_many_attempts',
      `Too many mails asked for. Try again in ${waitInWords(retryAfterSeconds)}.`,
      undefined,
      retryAfterSeconds,
    );
    this.name = 'TooManyMailRequestsError';
  }
}

/**
 * Limits how often anyone can make the gateway send mail (reset links, verification links), per address and per
 * client IP, in the login-failure table's rolling window like the registration throttle (so it holds across
 * instances). Counted whether or not the address has an account: the limit itself must not tell which do.
 * Per address it also stops anyone from filling a person's inbox.
 */
export class MailThrottle {
  constructor(
    private readonly rows: LoginFailureRepository,
    private readonly settings: MailThrottleSettings = DEFAULT_MAIL_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records the request, or throws TooManyMailRequestsError (and records nothing). */
  async admit(email: string, ip: string): Promise<void> {
    const at = this.now();
    const emailSubject = `mail-email:${createHash('sha256').update(normalizeEmail(email.trim()), 'utf8').digest('hex')}`;
    const ipSubject = `mail-ip:${ip}`;
    const own = await this.rows.record([emailSubject, ipSubject], at);
    const retryAt = Math.max(
      await this.blockedUntil(emailSubject, at, this.settings.maxPerEmail, own),
      await this.blockedUntil(ipSubject, at, this.settings.maxPerIp, own),
    );
    if (retryAt <= at) return;
    await this.rows.deleteIds(own);
    throw new TooManyMailRequestsError(Math.max(1, Math.ceil((retryAt - at) / 1000)));
  }

  private async blockedUntil(subject: string, at: number, max: number, own: readonly string[]): Promise<number> {
    const earlier = (await this.rows.recent(subject, at - WINDOW_MS, max + own.length)).filter(
      (row) => !own.includes(row.id),
    );
    if (earlier.length < max) return 0;
    return earlier[max - 1]!.failedAt + WINDOW_MS;
  }
}
