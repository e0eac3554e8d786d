import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { verifyPassword } from '../../accounts/password.js';
import { relyingPartyOf } from '../../identity/passkeys.js';
import { isInternalPath, SsoRefusedError } from '../../identity/sso-sign-in.js';
import { refusal } from '../../identity/totp-factor.js';
import type { AccountRecord } from '../../storage/types.js';
import { hashToken } from '../../accounts/session-service.js';
import { TooManyLoginAttemptsError } from '../../accounts/login-throttle.js';
import { withoutControlCharacters } from '../text-fields.js';
import { parseInput } from './body-parsing.js';
import { DashboardError, notFound } from './dashboard-error.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount, sessionClient, setSessionCookie } from './dashboard-session.js';
import { publicBaseUrl } from './overview-routes.js';
import { presentAccount } from './presenters.js';
import { recordSignIn } from './sign-in-recording.js';
import type { SessionSignIn } from '../../accounts/session-service.js';
import type { SignInAttemptMethod } from '../../accounts/audit/sign-in-audit.js';
import { provisioningOrganisations } from '../../identity/sso-provisioning.js';

/** The cookie binding an SSO round trip to the browser that started it (its value is the flow's `state`). */
const SSO_STATE_COOKIE = 'tg_sso_state';
const token = z.string().max(100);
const code = z.string().max(40);
const secondFactorBody = z
  .object({ token, code: code.optional(), recoveryCode: code.optional() })
  .strict()
  .refine((body) => (body.code === undefined) !== (body.recoveryCode === undefined), {
    message: 'Send either a code from the authenticator app or a recovery code.',
  });
const passkeyOptionsBody = z.object({ token: token.optional() }).strict();
const passkeySignInBody = z
  .object({ passkeyToken: token, response: z.record(z.string(), z.unknown()), token: token.optional() })
  .strict();
const confirmBody = z.object({ code }).strict();
const disableBody = z.object({ password: z.string().max(1000), code }).strict();
const passkeyName = withoutControlCharacters(
  z.string().trim().min(1, 'Give the passkey a name.').max(60, 'Passkey names are at most 60 characters.'),
);
const passkeyRegisterBody = z
  .object({ token, response: z.record(z.string(), z.unknown()), name: passkeyName })
  .strict();
const renameBody = z.object({ name: passkeyName }).strict();
const ssoStartQuery = z.object({ returnTo: z.string().max(500).optional() });

type IdParams = { Params: { id: string } };

/**
 * Second factors, passkeys and single sign-on (docs/sign-in.md); mail, reset links, sessions and deletion are
 * identity-routes.ts: the second step of a password sign-in, the
 * security settings of a signed-in account, passkey sign-in, the SSO round trip and the operator's reset.
 */
export function registerSignInMethodRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const identity = deps.signInMethods;
  const cookieSettings = { publicBaseUrl: deps.publicBaseUrl };
  const party = (request: FastifyRequest) => relyingPartyOf(publicBaseUrl(request, deps.publicBaseUrl));
  const secondFactorsChanged = (request: FastifyRequest, proved: boolean) =>
    secondFactorsChangedIn(deps, request, proved);

  async function startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    account: AccountRecord,
    signIn: SessionSignIn & { organisationId?: string | null },
  ) {
    if (account.disabled) {
      await recordSignIn(deps, request, {
        outcome: 'failure',
        method: signIn.method,
        accountId: account.id,
        email: account.email,
        reason: 'account_disabled',
        ...(signIn.ssoProvider === undefined ? {} : { provider: signIn.ssoProvider }),
      });
      throw new DashboardError(
        403,
        'account_disabled',
        'This account is disabled. Ask the operator of this gateway to enable it again.',
      );
    }
    const old = request.dashboard!.token;
    if (old !== undefined) await deps.sessions.end(old);
    // With the device and address, as a password sign-in records them: the sessions list shows them.
    const session = await deps.sessions.start(account.id, sessionClient(request), signIn);
    if (signIn.organisationId != null)
      await deps.organisations.switchTo(account.id, hashToken(session), signIn.organisationId);
    await recordSignIn(deps, request, {
      outcome: 'success',
      method: signIn.method,
      accountId: account.id,
      email: account.email,
      ...(signIn.ssoProvider === undefined ? {} : { provider: signIn.ssoProvider }),
    });
    return {
      account: presentAccount(account),
      csrfToken: setSessionCookie(request, reply, session, true, cookieSettings),
    };
  }

  /** A refused step: logged, and in the audit log of the person's organisations when known; never a code or token. */
  async function refused(
    request: FastifyRequest,
    reason: string,
    accountId: string | null,
    message: string,
    method: SignInAttemptMethod,
    auditReason: string = reason,
  ): Promise<DashboardError> {
    request.log.warn({ event: 'sign_in_refused', reason, accountId }, message);
    if (accountId !== null)
      await recordSignIn(deps, request, { outcome: 'failure', method, accountId, reason: auditReason });
    return new DashboardError(401, reason, message);
  }

  // The second step of a password sign-in: a code from the app, or a recovery code.
  api.post('/auth/second-factor', { config: { access: 'public' } }, async (request, reply) => {
    const body = parseInput(secondFactorBody, request.body);
    const challenge = await identity.challenges.find('second_factor', body.token);
    if (challenge === null || challenge.accountId === null) {
      throw await refused(
        request,
        'second_factor_expired',
        null,
        'This sign-in expired. Enter your email and password again.',
        'second_factor',
      );
    }
    const accountId = challenge.accountId;
    const account = await deps.accounts.findById(accountId);
    // Each code counts as a login attempt of the account from this address (429 past the limit); a right one
    // clears them, as a right password does.
    let attempt: Awaited<ReturnType<typeof deps.loginThrottle.begin>>;
    try {
      attempt = await deps.loginThrottle.begin(account.email, request.ip);
    } catch (error) {
      if (error instanceof TooManyLoginAttemptsError)
        await recordSignIn(deps, request, {
          outcome: 'failure',
          method: 'second_factor',
          accountId,
          reason: 'throttled',
        });
      throw error;
    }
    let accepted: boolean;
    let message: string;
    let why: string;
    if (body.code !== undefined) {
      const check = await identity.totp.check(accountId, body.code);
      accepted = check === 'accepted';
      message = refusal(check);
      why = check === 'replayed' ? 'replayed_code' : 'wrong_code';
    } else {
      accepted = await identity.totp.spendRecoveryCode(accountId, body.recoveryCode ?? '');
      message = 'The recovery code is not correct or was used already.';
      why = 'wrong_recovery_code';
    }
    if (!accepted) {
      const more = await identity.challenges.fail(challenge);
      throw await refused(
        request,
        'invalid_second_factor',
        accountId,
        more ? message : `${message} Too many tries: enter your email and password again.`,
        'second_factor',
        why,
      );
    }
    if (!(await identity.challenges.consume(challenge))) {
      throw await refused(
        request,
        'second_factor_expired',
        accountId,
        'This sign-in expired. Enter your email and password again.',
        'second_factor',
      );
    }
    await attempt.succeeded();
    return startSession(request, reply, account, { method: 'second_factor' });
  });

  // Passkey sign-in: alone (passwordless), or as the second step after a password (`token` given).
  api.post('/auth/passkey/options', { config: { access: 'public' } }, async (request) => {
    const body = parseInput(passkeyOptionsBody, request.body);
    let accountId: string | null = null;
    if (body.token !== undefined) {
      const challenge = await identity.challenges.find('second_factor', body.token);
      if (challenge === null) {
        throw await refused(
          request,
          'second_factor_expired',
          null,
          'This sign-in expired. Enter your email and password again.',
          'passkey',
        );
      }
      accountId = challenge.accountId;
    }
    const { token: passkeyToken, options } = await identity.passkeys.startSignIn(party(request), accountId);
    return { passkeyToken, options };
  });

  api.post('/auth/passkey', { config: { access: 'public' } }, async (request, reply) => {
    const body = parseInput(passkeySignInBody, request.body);
    const pending = body.token === undefined ? null : await identity.challenges.find('second_factor', body.token);
    if (body.token !== undefined && pending === null) {
      throw await refused(
        request,
        'second_factor_expired',
        null,
        'This sign-in expired. Enter your email and password again.',
        'second_factor',
      );
    }
    const result = await identity.passkeys.finishSignIn(body.passkeyToken, body.response);
    if (result === null || (pending !== null && pending.accountId !== result.accountId)) {
      if (pending !== null) await identity.challenges.fail(pending);
      throw await refused(
        request,
        'passkey_refused',
        pending?.accountId ?? null,
        'The passkey was not accepted. Try again.',
        'passkey',
      );
    }
    if (pending !== null && !(await identity.challenges.consume(pending))) {
      throw await refused(
        request,
        'second_factor_expired',
        result.accountId,
        'This sign-in expired. Enter your email and password again.',
        'passkey',
      );
    }
    const account = await deps.accounts.findById(result.accountId);
    // The password step left its attempt counted until the second step succeeds: cleared now.
    if (pending !== null) await (await deps.loginThrottle.begin(account.email, request.ip)).succeeded();
    return startSession(request, reply, account, { method: pending === null ? 'passkey' : 'second_factor' });
  });

  // Security settings of the signed-in account.
  api.get('/security', async (request) => {
    const account = currentAccount(request);
    const [totpOn, recoveryCodesLeft, passkeys] = await Promise.all([
      identity.totp.isOn(account.id),
      identity.totp.recoveryCodesLeft(account.id),
      identity.passkeys.list(account.id),
    ]);
    return {
      totp: { enabled: totpOn, recoveryCodesLeft: totpOn ? recoveryCodesLeft : 0 },
      passkeys: passkeys.map((passkey) => ({
        id: passkey.id,
        name: passkey.name,
        createdAt: passkey.createdAt,
        lastUsedAt: passkey.lastUsedAt,
      })),
    };
  });

  api.post('/security/totp', async (request) => {
    const account = currentAccount(request);
    return identity.totp.begin(account.id, account.email);
  });

  api.post('/security/totp/confirm', async (request) => {
    const account = currentAccount(request);
    const { code: entered } = parseInput(confirmBody, request.body);
    const recoveryCodes = await identity.totp.confirm(account.id, entered);
    await secondFactorsChanged(request, true);
    return { recoveryCodes };
  });

  api.post('/security/totp/disable', async (request) => {
    const account = currentAccount(request);
    const body = parseInput(disableBody, request.body);
    if (!(await verifyPassword(body.password, account.passwordHash))) {
      throw refusedField(request, account.id, 'The password is not correct.', 'password');
    }
    if (!(await identity.totp.isOn(account.id))) throw notFound('Two-step sign-in with an authenticator app is off.');
    const check = await identity.totp.check(account.id, body.code);
    if (check !== 'accepted' && !(await identity.totp.spendRecoveryCode(account.id, body.code))) {
      throw refusedField(request, account.id, refusal(check), 'code');
    }
    await identity.totp.turnOff(account.id);
    await secondFactorsChanged(request, false);
    request.log.info({ event: 'totp_disabled', accountId: account.id }, 'two-step sign-in turned off');
    return { totp: { enabled: false, recoveryCodesLeft: 0 } };
  });

  api.post('/security/recovery-codes', async (request) => {
    const account = currentAccount(request);
    const { code: entered } = parseInput(confirmBody, request.body);
    const check = await identity.totp.check(account.id, entered);
    if (check !== 'accepted') throw refusedField(request, account.id, refusal(check), 'code');
    const recoveryCodes = await identity.totp.newRecoveryCodes(account.id);
    await secondFactorsChanged(request, false);
    return { recoveryCodes };
  });

  api.post('/security/passkeys/options', async (request) => {
    const account = currentAccount(request);
    return identity.passkeys.startRegistration(account, party(request));
  });

  api.post('/security/passkeys', async (request, reply) => {
    const account = currentAccount(request);
    const body = parseInput(passkeyRegisterBody, request.body);
    const passkey = await identity.passkeys.finishRegistration(account.id, body.token, body.response, body.name);
    await secondFactorsChanged(request, true);
    return reply.code(201).send({
      passkey: { id: passkey.id, name: passkey.name, createdAt: passkey.createdAt, lastUsedAt: passkey.lastUsedAt },
    });
  });

  api.patch<IdParams>('/security/passkeys/:id', async (request) => {
    const account = currentAccount(request);
    const { name } = parseInput(renameBody, request.body);
    if (!(await identity.passkeys.rename(account.id, request.params.id, name))) throw notFound('No such passkey.');
    return { id: request.params.id, name };
  });

  api.delete<IdParams>('/security/passkeys/:id', async (request) => {
    const account = currentAccount(request);
    if (!(await identity.passkeys.remove(account.id, request.params.id))) throw notFound('No such passkey.');
    await secondFactorsChanged(request, false);
    return { id: request.params.id, removed: true };
  });

  // The operator's reset, for a person who lost every second factor.
  api.post<IdParams>('/admin/accounts/:id/reset-second-factors', { config: { access: 'admin' } }, async (request) => {
    const account = await deps.accounts.findById(request.params.id);
    const removed = await identity.resetSecondFactors(account.id);
    // Sessions that a removed factor opened end with it.
    await deps.sessions.endAll(account.id);
    request.log.warn(
      { event: 'second_factors_reset', accountId: account.id, operatorId: currentAccount(request).id },
      'second factors reset by an operator',
    );
    return { id: account.id, totpRemoved: removed.totp, passkeysRemoved: removed.passkeys };
  });

  // Single sign-on.
  api.get('/auth/sso/providers', { config: { access: 'public' } }, async () => ({ providers: identity.sso.list() }));

  api.get<IdParams>('/auth/sso/:id/start', { config: { access: 'public' } }, async (request, reply) => {
    const { returnTo = '/' } = parseInput(ssoStartQuery, request.query);
    if (!isInternalPath(returnTo)) {
      request.log.warn({ event: 'sign_in_refused', reason: 'redirect_outside' }, 'SSO return path outside the gateway');
      throw new DashboardError(400, 'invalid_request', 'The return path must be a page of this gateway.', 'returnTo');
    }
    const redirectUri = `${publicBaseUrl(request, deps.publicBaseUrl)}/api/auth/sso/${request.params.id}/callback`;
    let started: Awaited<ReturnType<typeof identity.sso.start>>;
    try {
      started = await identity.sso.start(request.params.id, redirectUri, returnTo);
    } catch (error) {
      if (error instanceof SsoRefusedError) {
        throw new DashboardError(error.reason === 'unknown_provider' ? 404 : 502, error.reason, error.message);
      }
      throw error;
    }
    reply.setCookie(SSO_STATE_COOKIE, started.state, {
      path: '/api/auth/sso',
      httpOnly: true,
      // Lax: the provider's redirect back is a top-level GET navigation, which carries Lax cookies.
      sameSite: 'lax',
      secure: request.protocol === 'https' || deps.publicBaseUrl?.startsWith('https://') === true,
      maxAge: 600,
    });
    return reply.redirect(started.authorizationUrl, 302);
  });

  api.get<IdParams>('/auth/sso/:id/callback', { config: { access: 'public' } }, async (request, reply) => {
    const base = publicBaseUrl(request, deps.publicBaseUrl);
    const current = new URL(request.url, base);
    reply.clearCookie(SSO_STATE_COOKIE, { path: '/api/auth/sso' });
    try {
      const result = await identity.sso.finish(request.params.id, current, request.cookies[SSO_STATE_COOKIE]);
      await startSession(request, reply, result.account, {
        method: 'sso',
        ssoProvider: result.provider,
        organisationId: result.organisationId,
      });
      request.log.info(
        {
          event: 'sso_sign_in',
          provider: request.params.id,
          accountId: result.account.id,
          provisioned: result.provisioned,
        },
        'signed in through SSO',
      );
      return reply.redirect(result.returnTo, 302);
    } catch (error) {
      const reason =
        error instanceof SsoRefusedError ? error.reason : error instanceof DashboardError ? error.code : undefined;
      if (reason === undefined) throw error;
      request.log.warn({ event: 'sign_in_refused', reason, provider: request.params.id }, (error as Error).message);
      if (error instanceof SsoRefusedError) {
        // Nobody is known from a token that failed its checks: the refusal goes to the organisations the provider
        // provisions into (and the person's own, when the refusal came after they were known).
        const settings = identity.sso.settings(request.params.id);
        await recordSignIn(deps, request, {
          outcome: 'failure',
          method: 'sso',
          accountId: error.accountId,
          provider: request.params.id,
          reason: error.check === undefined ? error.reason : `${error.reason}:${error.check}`,
          organisationIds: settings === undefined ? [] : provisioningOrganisations(settings),
        });
      }
      // Back to the sign-in page, which shows the sentence; nothing was changed.
      return reply.redirect(`/login?sso_error=${encodeURIComponent((error as Error).message)}`, 302);
    }
  });
}

/**
 * After a change to the person's second factors, in this session: every other session ends (a stolen session must
 * not outlive the change), and a factor just proved here makes this session a two-step one.
 */
async function secondFactorsChangedIn(
  deps: DashboardDependencies,
  request: FastifyRequest,
  proved: boolean,
): Promise<void> {
  const session = request.dashboard!.session!;
  const token = request.dashboard!.token!;
  await deps.sessions.endOthers(session.account.id, token);
  if (proved) await deps.sessions.provedSecondFactor(token, session.session.signInMethod ?? 'password');
}

function refusedField(request: FastifyRequest, accountId: string, message: string, field: string): DashboardError {
  request.log.warn({ event: 'sign_in_refused', reason: 'security_change_refused', accountId }, message);
  return new DashboardError(400, 'invalid_request', message, field);
}

/**
 * After a correct password: the pending second step when the account has a second factor (no session yet), or
 * null when the password alone signs in.
 */
export async function pendingSecondFactor(deps: DashboardDependencies, account: AccountRecord) {
  const methods = await deps.signInMethods.secondFactors(account.id);
  if (methods.length === 0) return null;
  const pending = await deps.signInMethods.challenges.issue('second_factor', account.id, null);
  return { account: null, secondFactor: { token: pending.token, methods, expiresAt: pending.expiresAt } };
}

/** Before checking a password: refused when the email's domain must sign in through a provider. */
export function refuseWhenSsoRequired(deps: DashboardDependencies, email: string): void {
  const provider = deps.signInMethods.sso.requiredFor(email);
  if (provider === undefined) return;
  throw new DashboardError(
    403,
    'sso_required',
    `Accounts of this email domain sign in with ${provider.name}. Use "Sign in with ${provider.name}".`,
  );
}
