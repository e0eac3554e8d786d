import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ReportFailure } from '../../identity/email-identity.js';
import { withoutControlCharacters } from '../text-fields.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { DashboardError } from './dashboard-error.js';
import { currentAccount, sessionClient, setSessionCookie } from './dashboard-session.js';
import { presentAccount } from './presenters.js';
import { pendingSecondFactor } from './sign-in-method-routes.js';
import { LinkRefusedError } from '../../identity/account-links.js';
import type { SignInAttemptMethod } from '../../accounts/audit/sign-in-audit.js';
import { recordSignIn } from './sign-in-recording.js';

const email = withoutControlCharacters(z.string().max(254));
const token = z.string().max(200);
const forgotBody = z.object({ email, next: z.string().max(1000).optional() }).strict();
const resetBody = z.object({ token, newPassword: z.string().max(1000) }).strict();
const verifyBody = z.object({ token }).strict();
const emailChangeBody = z.object({ newEmail: email, password: z.string().max(1000) }).strict();
const passwordBody = z.object({ password: z.string().max(1000) }).strict();

const PUBLIC = { config: { access: 'public' as const } };
type IdParams = { Params: { id: string } };

/** The same words for any address: whether it has an account is not for the asker to learn. */
const RESET_ANSWER =
  'If an account uses this address, a link to reset its password is on its way. It works for an hour.';
const CHANGE_ANSWER = 'A link is on its way to the new address. The change takes effect when you open it.';

/**
 * Verified email, password reset, email change, the sessions list and account deletion (docs/dashboard-api.md).
 * Kept apart from auth-routes.ts: these are the flows that go through mail and the account settings page.
 */
export function registerIdentityRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const identity = deps.emailIdentity;
  const cookieSettings = { publicBaseUrl: deps.publicBaseUrl };

  /** A link refused after its account was found (used, expired) goes to the audit log of that person. */
  async function refusedLinksRecorded<T>(
    request: FastifyRequest,
    method: SignInAttemptMethod,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof LinkRefusedError && error.accountId !== null)
        await recordSignIn(deps, request, {
          outcome: 'failure',
          method,
          accountId: error.accountId,
          reason: `link_${error.problem}`,
        });
      throw error;
    }
  }

  api.get('/account/identity', async (request) => identity.state(currentAccount(request)));

  api.post('/auth/forgot-password', PUBLIC, async (request) => {
    const body = parseInput(forgotBody, request.body);
    await identity.requestPasswordReset(body.email, request.ip, body.next, reporter(request));
    return { message: RESET_ANSWER };
  });

  api.post('/auth/reset-password', PUBLIC, async (request, reply) => {
    const body = parseInput(resetBody, request.body);
    const old = request.dashboard!.token;
    const { account, sessionToken } = await refusedLinksRecorded(request, 'reset_link', () =>
      identity.resetPassword(body.token, body.newPassword, sessionClient(request)),
    );
    if (old !== undefined) await deps.sessions.end(old);
    // A second factor set up: the second step follows, as after a password sign-in (no session yet).
    if (sessionToken === null) return pendingSecondFactor(deps, account);
    await recordSignIn(deps, request, {
      outcome: 'success',
      method: 'reset_link',
      accountId: account.id,
      email: account.email,
    });
    return {
      account: presentAccount(account),
      csrfToken: setSessionCookie(request, reply, sessionToken, true, cookieSettings),
    };
  });

  api.post('/auth/verify-email', PUBLIC, async (request) => {
    const { token: value } = parseInput(verifyBody, request.body);
    const account = await refusedLinksRecorded(request, 'verification_link', () => identity.verifyEmail(value));
    return { email: account.email, emailVerified: true };
  });

  api.post('/auth/resend-verification', async (request) => {
    await identity.resendVerification(currentAccount(request), request.ip);
    return { message: 'A new link is on its way.' };
  });

  api.post('/account/email', async (request) => {
    const body = parseInput(emailChangeBody, request.body);
    await identity.requestEmailChange(
      currentAccount(request),
      body.newEmail,
      body.password,
      request.ip,
      reporter(request),
    );
    return { message: CHANGE_ANSWER };
  });

  api.get('/account/sessions', async (request) => {
    const sessions = await deps.accountSessions.list(currentAccount(request).id, request.dashboard!.token!);
    return { sessions };
  });

  api.post<IdParams>('/account/sessions/:id/end', async (request) => {
    await deps.accountSessions.end(currentAccount(request).id, request.params.id);
    return { ended: 1 };
  });

  api.post('/account/sessions/end-others', async (request) => {
    const ended = await deps.accountSessions.endOthers(currentAccount(request).id, request.dashboard!.token!);
    return { ended };
  });

  api.post('/account/delete', async (request, reply) => {
    const { password } = parseInput(passwordBody, request.body);
    await deps.accountDeletion.delete(currentAccount(request), password);
    return {
      deleted: true,
      csrfToken: setSessionCookie(request, reply, deps.sessions.newToken(), false, cookieSettings),
    };
  });

  // Until the address is verified (when the operator requires it), no new keys: the answer says what to do.
  api.addHook('preHandler', async (request) => {
    if (request.method !== 'POST') return;
    const url = request.routeOptions.url;
    if (url !== '/api/keys' && url !== '/api/keys/:id/rotate') return;
    const refusal = await identity.keyCreationRefusal(currentAccount(request));
    if (refusal !== null) throw new DashboardError(403, 'email_not_verified', refusal);
  });
}

/** Failures of mail sent after the reply go to the request's log line context. */
function reporter(request: FastifyRequest): ReportFailure {
  return (error, what) => request.log.warn({ err: error }, `${what} not sent`);
}

const ADMIN = { config: { access: 'admin' as const } };

/**
 * What the operator can do for a person without mail (docs/dashboard-api.md): vouch for their address, and make a
 * reset link to pass on by other means.
 */
export function registerOperatorIdentityRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.post<IdParams>('/admin/accounts/:id/verify-email', ADMIN, async (request) => {
    const account = await deps.accounts.findById(request.params.id);
    await deps.emailIdentity.operatorVerify(account.id);
    return { account: presentAccount(account), emailVerified: true };
  });

  api.post<IdParams>('/admin/accounts/:id/reset-link', ADMIN, async (request) => {
    const account = await deps.accounts.findById(request.params.id);
    if (account.disabled) throw new DashboardError(409, 'account_disabled', 'This account is disabled or deleted.');
    return { account: presentAccount(account), ...(await deps.emailIdentity.operatorResetLink(account)) };
  });
}
