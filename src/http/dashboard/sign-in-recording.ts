import type { FastifyRequest } from 'fastify';
import type { SignInAttempt } from '../../accounts/audit/sign-in-audit.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';

type Attempt = Omit<SignInAttempt, 'ip' | 'userAgent'>;

/**
 * A sign-in attempt into the audit log of the person's organisations, with the request's address and User-Agent.
 * A success is recorded before the answer (an append that fails fails the sign-in, as any audited change does);
 * a failure's record must not change the refusal the person gets, so its own failure is only logged.
 */
export async function recordSignIn(
  deps: Pick<DashboardDependencies, 'signInAudit'>,
  request: FastifyRequest,
  attempt: Attempt,
): Promise<void> {
  const full: SignInAttempt = { ...attempt, ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
  if (attempt.outcome === 'success') {
    await deps.signInAudit.record(full);
    return;
  }
  try {
    await deps.signInAudit.record(full);
  } catch (error) {
    request.log.warn({ err: error, event: 'sign_in_audit_failed' }, 'a refused sign-in could not be audited');
  }
}
