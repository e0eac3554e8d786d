import type { FastifyReply, FastifyRequest } from 'fastify';
import { roleAllows, type Permission } from '../../accounts/organisation-roles.js';
import { signInPolicyRefusal } from '../../accounts/sign-in-policy.js';
import { SESSION_MAX_AGE_MS, SessionService, type SessionClient } from '../../accounts/session-service.js';
import type { Membership } from '../../storage/organisation-types.js';
import type { AccountRecord } from '../../storage/types.js';
import type { SessionWithAccount } from '../../storage/session-types.js';
import {
  csrfFailed,
  DashboardError,
  forbidden,
  membershipEnded,
  noOrganisation,
  notAuthenticated,
  roleForbids,
} from './dashboard-error.js';

export const SESSION_COOKIE = 'tg_session';

/** What the session hook leaves on a dashboard request. */
export interface DashboardContext {
  /** The cookie's token (a logged-in session's, or a visitor's), when the request carried a well-formed one. */
  token: string | undefined;
  session: SessionWithAccount | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the dashboard session hook on every `/api` request. */
    dashboard: DashboardContext | null;
  }
  interface FastifyContextConfig {
    /** Dashboard routes: who may call. Default `account` (a logged-in session). */
    access?: 'public' | 'account' | 'admin';
    /** Dashboard: no CSRF check. Only the Stripe webhook, which its signature authenticates. */
    skipCsrf?: boolean;
    /**
     * Dashboard routes that act in the session's organisation: what the person's role there must allow
     * (accounts/organisation-roles.ts). Checked on every request against the membership read with the session.
     */
    permission?: Permission;
  }
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the hook asks beyond the session row when an organisation requires a second factor. */
export interface SignInPolicyInputs {
  hasSecondFactor(accountId: string): Promise<boolean>;
  /** The SSO provider's display name, for the refusal's message. */
  providerName?(id: string): string;
}

/**
 * onRequest hook of the dashboard API: CSRF first (a state-changing call without the token bound to its cookie
 * is refused before anything is parsed or read), then the session, then the route's access rule, then the
 * organisation's sign-in policy (for routes that act in it).
 */
export function createDashboardSessionHook(sessions: SessionService, policyInputs?: SignInPolicyInputs) {
  return async function loadDashboardSession(request: FastifyRequest): Promise<void> {
    // No route, nothing to protect: the not-found handler answers 404 whoever asks.
    if (request.is404) return;
    const cookie = request.cookies[SESSION_COOKIE];
    const token = SessionService.isToken(cookie) ? cookie : undefined;
    const config = request.routeOptions.config;
    if (UNSAFE_METHODS.has(request.method) && config.skipCsrf !== true) {
      const header = request.headers['x-csrf-token'];
      if (token === undefined || !SessionService.csrfMatches(token, Array.isArray(header) ? header[0] : header))
        throw csrfFailed();
    }
    const session = token === undefined ? null : await sessions.resolve(token);
    request.dashboard = { token, session };
    const access = config.access ?? 'account';
    if (access === 'public') return;
    if (session === null) throw notAuthenticated();
    if (access === 'admin' && session.account.role !== 'admin') throw forbidden();
    if (config.permission !== undefined) {
      if (session.membership === null) throw noOrganisation();
      // The session chose an organisation the person no longer belongs to (removed, or left elsewhere): its pages
      // must not quietly show another organisation's, so the person chooses again.
      const chosen = session.session.organisationId;
      if (chosen !== null && chosen !== session.membership.organisation.id) throw membershipEnded();
      const policy = session.membership.organisation.signInPolicy;
      if (policy.requireSecondFactor || policy.requiredSsoProviders.length > 0) {
        // Read only when the organisation asks for it: most requests pay nothing for the policy.
        const hasSecondFactor =
          policy.requireSecondFactor && policyInputs !== undefined
            ? await policyInputs.hasSecondFactor(session.account.id)
            : false;
        const refusal = signInPolicyRefusal(policy, session.session, hasSecondFactor, (id) =>
          policyInputs?.providerName === undefined ? id : policyInputs.providerName(id),
        );
        if (refusal !== null) throw new DashboardError(403, refusal.code, refusal.message);
      }
      if (!roleAllows(session.membership.role, config.permission))
        throw roleForbids(session.membership.role, config.permission);
    }
  };
}

/** The organisation the session works in, and the person's role there, for a route that acts in it. */
export function currentOrganisation(request: FastifyRequest): Membership {
  const session = request.dashboard?.session;
  if (session === null || session === undefined) throw notAuthenticated();
  if (session.membership === null) throw noOrganisation();
  return session.membership;
}

/** The logged-in account of a route whose access rule guarantees one. */
export function currentAccount(request: FastifyRequest): AccountRecord {
  const session = request.dashboard?.session;
  if (session === null || session === undefined) throw notAuthenticated();
  return session.account;
}

/** A User-Agent longer than this is cut: it is only a label in the sessions list. */
const USER_AGENT_MAX = 300;

/** The device and address the sessions list shows for a session started by this request. */
export function sessionClient(request: FastifyRequest): SessionClient {
  const agent = request.headers['user-agent'];
  return { userAgent: agent?.slice(0, USER_AGENT_MAX), ip: request.ip };
}

export interface CookieSettings {
  /** The operator's public origin; an https one makes the cookie Secure whatever the request looked like. */
  publicBaseUrl: string | undefined;
}

/** Secure when served over HTTPS (directly, or through a trusted proxy's X-Forwarded-Proto) or when the public URL is https. */
function isSecure(request: FastifyRequest, settings: CookieSettings): boolean {
  return request.protocol === 'https' || settings.publicBaseUrl?.startsWith('https://') === true;
}

/**
 * Puts a token in the session cookie and returns the CSRF token bound to it. `loggedIn` tokens live as long
 * as a session may; a visitor's token is a browser-session cookie.
 */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  loggedIn: boolean,
  settings: CookieSettings,
): string {
  reply.setCookie(SESSION_COOKIE, token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: isSecure(request, settings),
    ...(loggedIn ? { maxAge: Math.floor(SESSION_MAX_AGE_MS / 1000) } : {}),
  });
  return SessionService.csrfTokenFor(token);
}
