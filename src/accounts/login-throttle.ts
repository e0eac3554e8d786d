import { createHash } from 'node:crypto';
import { normalizeEmail } from '../storage/database-schema.js';
import type { LoginFailureRepository } from '../storage/session-types.js';

export interface LoginThrottleSettings {
  windowMs: number;
  /** Failed logins for one email address from one client IP within the window. */
  maxPerEmailAndIp: number;
  /** Failed logins per client IP within the window (many emails from one address). */
  maxPerIp: number;
}

export const DEFAULT_LOGIN_THROTTLE: LoginThrottleSettings = {
  windowMs: 15 * 60_000,
  maxPerEmailAndIp: 5,
  maxPerIp: 20,
};

export class TooManyLoginAttemptsError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many failed logins. Try again in ${waitInWords(retryAfterSeconds)}.`);
    this.name = 'TooManyLoginAttemptsError';
  }
}

/** "45 seconds", "1 minute", "8 minutes": said once, in the unit a person reads. */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

/** What a guarded login reports back: call `succeeded()` when the password was right. */
export interface LoginAttempt {
  succeeded(): Promise<void>;
}

/**
 * Rolling-window throttle of password guessing, per email from one client IP and per client IP, in the database
 * so it holds across instances. Not per email alone: then anyone could lock any account for the window with a
 * few wrong passwords, and its owner could not log in from anywhere. Per email and IP, a guesser is stopped after
 * a few tries at one account and after `maxPerIp` tries over all accounts, while the owner, from another address,
 * is not affected. The client IP is fastify's `request.ip`, i.e. honours TRUST_PROXY (the address the trusted proxy
 * saw, not what the client wrote into X-Forwarded-For). Each attempt is recorded before the password is checked
 * and removed when it succeeds: concurrent guesses then count each other, so a burst cannot slip past the limit
 * between check and record. A success also clears that email's failures from that IP. Refused attempts are not
 * counted, so waiting always helps.
 */
export class LoginThrottle {
  constructor(
    private readonly failures: LoginFailureRepository,
    private readonly settings: LoginThrottleSettings = DEFAULT_LOGIN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records the attempt, or throws TooManyLoginAttemptsError (and records nothing). */
  async begin(email: string, ip: string): Promise<LoginAttempt> {
    const at = this.now();
    const ipSubject = `ip:${ip}`;
    // The address in clear as before (the per-IP subject has it anyway), the email only as its hash.
    const emailSubject = `email:${createHash('sha256').update(normalizeEmail(email.trim()), 'utf8').digest('hex')} ${ipSubject}`;
    const ids = await this.failures.record([emailSubject, ipSubject], at);
    const since = at - this.settings.windowMs;
    const retryAt = Math.max(
      await this.blockedUntil(emailSubject, since, this.settings.maxPerEmailAndIp, ids),
      await this.blockedUntil(ipSubject, since, this.settings.maxPerIp, ids),
    );
    if (retryAt > at) {
      await this.failures.deleteIds(ids);
      throw new TooManyLoginAttemptsError(Math.max(1, Math.ceil((retryAt - at) / 1000)));
    }
    return {
      succeeded: async () => {
        await this.failures.deleteIds(ids);
        await this.failures.clear(emailSubject);
        // Rows only matter inside the window; successes are frequent enough to keep the table small.
        await this.failures.prune(since);
      },
    };
  }

  /** When the subject may try again (epoch ms); 0 when it may now. Attempts in `own` are this one's rows. */
  private async blockedUntil(subject: string, since: number, max: number, own: readonly string[]): Promise<number> {
    const recent = (await this.failures.recent(subject, since, max + own.length)).filter(
      (row) => !own.includes(row.id),
    );
    if (recent.length < max) return 0;
    // The max-th newest failure must leave the window before another attempt is allowed.
    return recent[max - 1]!.failedAt + this.settings.windowMs;
  }
}
