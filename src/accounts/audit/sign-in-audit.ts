import type { OrganisationRepository } from '../../storage/organisation-types.js';
import type { AuditLog } from './audit-log.js';

/** How a sign-in was tried. */
export type SignInAttemptMethod =
  | 'password'
  | 'second_factor'
  | 'passkey'
  | 'sso'
  | 'reset_link'
  | 'verification_link'
  | 'session';

export interface SignInAttempt {
  outcome: 'success' | 'failure';
  method: SignInAttemptMethod;
  /** The person, when known (a wrong password of a known email, a refused code); null otherwise. */
  accountId: string | null;
  email?: string | null;
  /** Why it failed, as a stable word (`invalid_credentials`, `replayed_code`, `token_rejected:nonce`, …). */
  reason?: string;
  /** The SSO provider, for `sso`. */
  provider?: string;
  ip: string | null;
  userAgent: string | null;
  /**
   * Organisations to record in besides the person's own: a refused SSO sign-in of nobody known yet goes to the
   * organisations the provider provisions into.
   */
  organisationIds?: readonly string[];
}

/** A User-Agent is only a label: cut, so a hostile one cannot bloat the log. */
const USER_AGENT_MAX = 300;

/**
 * Sign-in attempts, successes and failures, in the audit log of every organisation the person belongs to (and for
 * SSO, those the provider provisions into). What is recorded: the method, the outcome, why it failed, the client's
 * address and User-Agent; never a password, code, token or link.
 */
export class SignInAudit {
  constructor(
    private readonly audit: AuditLog,
    private readonly organisations: Pick<OrganisationRepository, 'membershipsOf'>,
  ) {}

  async record(attempt: SignInAttempt): Promise<void> {
    const own =
      attempt.accountId === null
        ? []
        : (await this.organisations.membershipsOf(attempt.accountId)).map((membership) => membership.organisation.id);
    const organisationIds = [...new Set([...own, ...(attempt.organisationIds ?? [])])];
    const details = {
      method: attempt.method,
      ...(attempt.provider === undefined ? {} : { provider: attempt.provider }),
      ...(attempt.reason === undefined ? {} : { reason: attempt.reason }),
      userAgent: attempt.userAgent?.slice(0, USER_AGENT_MAX) ?? null,
    };
    for (const organisationId of organisationIds) {
      await this.audit.record({
        organisationId,
        actor:
          attempt.accountId === null
            ? { type: 'system', name: attempt.provider === undefined ? 'sign-in' : `sso:${attempt.provider}` }
            : { type: 'person', accountId: attempt.accountId, email: attempt.email ?? null },
        ip: attempt.ip,
        action: attempt.outcome === 'success' ? 'sign_in.success' : 'sign_in.failure',
        target: attempt.accountId === null ? null : { type: 'account', id: attempt.accountId },
        after: details,
      });
    }
  }
}
