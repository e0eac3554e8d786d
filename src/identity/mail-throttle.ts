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
    const emailSubject = `mail-email:${createHash('sha256').update(normalizeEmail(email.trim()), 'utf8').digest('hex')}`;
    await admitSubjects(this.rows, this.now(), [
      [emailSubject, this.settings.maxPerEmail],
      [`mail-ip:${ip}`, this.settings.maxPerIp],
    ]);
  }
}

export interface InvitationThrottleSettings {
  /** Invitation mails one person may have sent within the window (from any organisation). */
  maxPerInviter: number;
  /** Invitation mails sent for one organisation within the window (by any of its members). */
  maxPerOrganisation: number;
}

export const DEFAULT_INVITATION_THROTTLE: InvitationThrottleSettings = { maxPerInviter: 10, maxPerOrganisation: 30 };

/**
 * Limits invitation mails per inviter and per organisation, in the same rolling window and table as the mail
 * throttle: an account taken over, or an organisation's many admins, cannot make the gateway a spam relay.
 */
export class InvitationThrottle {
  constructor(
    private readonly rows: LoginFailureRepository,
    private readonly settings: InvitationThrottleSettings = DEFAULT_INVITATION_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records the invitation, or throws TooManyMailRequestsError (and records nothing). */
  async admit(inviterAccountId: string, organisationId: string): Promise<void> {
    await admitSubjects(this.rows, this.now(), [
      [`invite-by:${inviterAccountId}`, this.settings.maxPerInviter],
      [`invite-org:${organisationId}`, this.settings.maxPerOrganisation],
    ]);
  }
}

/**
 * Records one row per subject, then counts each subject's rows in the window without its own: over any limit, its
 * rows are removed again and the error says when the oldest counted row leaves the window. Concurrent requests see
 * each other's rows, so together they never pass a limit.
 */
async function admitSubjects(
  rows: LoginFailureRepository,
  at: number,
  limits: ReadonlyArray<readonly [subject: string, max: number]>,
): Promise<void> {
  const own = await rows.record(
    limits.map(([subject]) => subject),
    at,
  );
  let retryAt = 0;
  for (const [subject, max] of limits) retryAt = Math.max(retryAt, await blockedUntil(rows, subject, at, max, own));
  if (retryAt <= at) return;
  await rows.deleteIds(own);
  throw new TooManyMailRequestsError(Math.max(1, Math.ceil((retryAt - at) / 1000)));
}

async function blockedUntil(
  rows: LoginFailureRepository,
  subject: string,
  at: number,
  max: number,
  own: readonly string[],
): Promise<number> {
  const earlier = (await rows.recent(subject, at - WINDOW_MS, max + own.length)).filter((row) => !own.includes(row.id));
  if (earlier.length < max) return 0;
  return earlier[max - 1]!.failedAt + WINDOW_MS;
}
