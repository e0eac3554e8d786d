import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { GatewayError } from '../../canonical/errors.js';
import type { AccountRecord } from '../../storage/types.js';
import { withoutControlCharacters } from '../text-fields.js';
import { parseInput } from './body-parsing.js';
import { DashboardError } from './dashboard-error.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount, sessionClient, setSessionCookie } from './dashboard-session.js';
import { pendingSecondFactor, refuseWhenSsoRequired } from './sign-in-method-routes.js';
import { presentAccount, presentMembership } from './presenters.js';
import { recordSignIn } from './sign-in-recording.js';
import type { SessionSignIn } from '../../accounts/session-service.js';
import { TooManyLoginAttemptsError } from '../../accounts/login-throttle.js';

// Lengths here only bound the input; the password rules themselves are the account service's.
// A password may hold any character (only its hash is stored); an email with a control character is never valid.
const credentials = z
  .object({ email: withoutControlCharacters(z.string().max(254)), password: z.string().max(1000) })
  .strict();
const passwordChange = z.object({ currentPassword: z.string().max(1000), newPassword: z.string().max(1000) }).strict();

/** `GET /api/session`, register, login, logout, password change. */
export function registerAuthRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const cookieSettings = { publicBaseUrl: deps.publicBaseUrl };

  api.get('/session', { config: { access: 'public' } }, async (request, reply) => {
    const { token, session } = request.dashboard!;
    if (token === undefined) {
      // A first visit: a visitor token, so the login and registration forms have a CSRF token to send.
      return {
        account: null,
        csrfToken: setSessionCookie(request, reply, deps.sessions.newToken(), false, cookieSettings),
      };
    }
    return {
      account: session === null ? null : presentAccount(session.account),
      organisation: session?.membership == null ? null : presentMembership(session.membership),
      csrfToken: setSessionCookie(request, reply, token, session !== null, cookieSettings),
    };
  });

  api.post('/auth/register', { config: { access: 'public' } }, async (request, reply) => {
    const { email, password } = parseInput(credentials, request.body);
    await deps.registrationThrottle.admit(request.ip);
    let account: AccountRecord;
    try {
      account = await deps.accounts.create({ email, password });
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'conflict') {
        throw new DashboardError(409, 'email_taken', 'An account with this email already exists.', 'email');
      }
      throw error;
    }
    deps.emailIdentity.afterRegistration(account, (error, what) =>
      request.log.warn({ err: error }, `${what} not sent`),
    );
    const csrfToken = await startSession(request, reply, account.id);
    return reply.code(201).send({ account: presentAccount(account), csrfToken });
  });

  api.post('/auth/login', { config: { access: 'public' } }, async (request, reply) => {
    const { email, password } = parseInput(credentials, request.body);
    refuseWhenSsoRequired(deps, email);
    // A failure is recorded in the organisations of the account the email names, when there is one.
    const failed = async (reason: string) => {
      const known = await deps.accountRepository.findByEmail(email);
      if (known !== null)
        await recordSignIn(deps, request, {
          outcome: 'failure',
          method: 'password',
          accountId: known.id,
          email: known.email,
          reason,
        });
    };
    let attempt: Awaited<ReturnType<typeof deps.loginThrottle.begin>>;
    try {
      attempt = await deps.loginThrottle.begin(email, request.ip);
    } catch (error) {
      if (error instanceof TooManyLoginAttemptsError) await failed('throttled');
      throw error;
    }
    const account = await deps.accounts.verifyCredentials(email, password);
    if (account === null) {
      await failed('invalid_credentials');
      throw new DashboardError(401, 'invalid_credentials', 'The email or password is not correct.');
    }
    // Only someone who knows the password learns the account is disabled: told so, not that the password is wrong.
    if (account.disabled) {
      await failed('account_disabled');
      await attempt.succeeded();
      throw new DashboardError(
        403,
        'account_disabled',
        'This account is disabled. Ask the operator of this gateway to enable it again.',
      );
    }
    // With a second factor set up, no session yet: a short-lived token for the second step. The attempt stays
    // counted by the throttle until the second step succeeds, so the password cannot buy unlimited code guesses.
    const pending = await pendingSecondFactor(deps, account);
    if (pending !== null) return pending;
    await attempt.succeeded();
    const csrfToken = await startSession(request, reply, account.id);
    await recordSignIn(deps, request, {
      outcome: 'success',
      method: 'password',
      accountId: account.id,
      email: account.email,
    });
    return { account: presentAccount(account), csrfToken };
  });

  api.post('/auth/logout', { config: { access: 'public' } }, async (request, reply) => {
    const { token } = request.dashboard!;
    if (token !== undefined) await deps.sessions.end(token);
    return { csrfToken: setSessionCookie(request, reply, deps.sessions.newToken(), false, cookieSettings) };
  });

  api.post('/auth/password', async (request, reply) => {
    const account = currentAccount(request);
    const { currentPassword, newPassword } = parseInput(passwordChange, request.body);
    await deps.accounts.changePassword(account, currentPassword, newPassword);
    // The new session keeps how this one signed in: changing the password proves no less than before.
    const current = request.dashboard!.session!.session;
    const signIn: SessionSignIn = {
      method: current.signInMethod ?? 'password',
      ...(current.ssoProvider == null ? {} : { ssoProvider: current.ssoProvider }),
    };
    // Every session of the account ends, this one included; the user carries on in a new one (new id, new cookie).
    await deps.sessions.endAll(account.id);
    return { csrfToken: await startSession(request, reply, account.id, signIn) };
  });

  /** Ends the request's old session (if any) and starts a new one under a new token: the id rotates on login. */
  async function startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    accountId: string,
    signIn: SessionSignIn = { method: 'password' },
  ): Promise<string> {
    const old = request.dashboard!.token;
    if (old !== undefined) await deps.sessions.end(old);
    const token = await deps.sessions.start(accountId, sessionClient(request), signIn);
    return setSessionCookie(request, reply, token, true, cookieSettings);
  }
}
