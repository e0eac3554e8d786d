import type { LoginFailureRepository } from '../storage/session-types.js';
import { DEFAULT_LOGIN_THROTTLE } from './login-throttle.js';

export class TooManyRegistrationsError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many new accounts from this address. Try again in ${retryAfterSeconds} seconds.`);
    this.name = 'TooManyRegistrationsError';
  }
}

/**
 * The login throttle's window: both share the table, and a successful login prunes every row older than its
 * window, so a longer window here would be cut short.
 */
const WINDOW_MS = DEFAULT_LOGIN_THROTTLE.windowMs;

/**
 * At most `maxPerWindow` registrations per client IP in a rolling 15 minutes, so a script cannot mint accounts (and
 * their daily free tokens) in bulk. Counted in the login-failure table, which already gives a per-subject
 * rolling window in the database (so the limit holds across instances): each registration attempt is a row
 * under `register-ip:<ip>`, recorded before the account is created, so concurrent attempts count each other.
 * 0 turns the limit off.
 */
export class RegistrationThrottle {
  constructor(
    private readonly rows: LoginFailureRepository,
    private readonly maxPerWindow: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records the attempt, or throws TooManyRegistrationsError (and records nothing). */
  async admit(ip: string): Promise<void> {
    if (this.maxPerWindow <= 0) return;
    const at = this.now();
    const subject = `register-ip:${ip}`;
    const own = await this.rows.record([subject], at);
    const earlier = (await this.rows.recent(subject, at - WINDOW_MS, this.maxPerWindow + own.length)).filter(
      (row) => !own.includes(row.id),
    );
    if (earlier.length < this.maxPerWindow) return;
    await this.rows.deleteIds(own);
    // The max-th newest registration must leave the window before another is allowed.
    const retryAt = earlier[this.maxPerWindow - 1]!.failedAt + WINDOW_MS;
    throw new TooManyRegistrationsError(Math.max(1, Math.ceil((retryAt - at) / 1000)));
  }
}
