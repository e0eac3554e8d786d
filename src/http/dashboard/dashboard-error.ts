import type { FastifyReply, FastifyRequest } from 'fastify';
import { TooManyLoginAttemptsError } from '../../accounts/login-throttle.js';
import { OrganisationError } from '../../accounts/organisation-error.js';
import { TooManyRegistrationsError } from '../../accounts/registration-throttle.js';
import { IdentityError } from '../../identity/identity-error.js';
import { clientAbortedUpload, clientAbortError, fromFrameworkError, logErrorReply } from '../render-error.js';

/**
 * An error of the dashboard API, rendered as `{"error": {"code", "message", "field"?}}` (docs/dashboard-api.md).
 * The `/v1` API keeps its OpenAI/Anthropic shapes; this shape is the SPA's.
 */
export class DashboardError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'DashboardError';
  }
}

export const notAuthenticated = () => new DashboardError(401, 'not_authenticated', 'Log in to continue.');
export const csrfFailed = () =>
  new DashboardError(403, 'csrf_failed', 'The request lacks a valid CSRF token: reload the page and try again.');
export const forbidden = () => new DashboardError(403, 'forbidden', 'This needs an operator (admin) account.');
export const notFound = (what: string, field?: string) => new DashboardError(404, 'not_found', what, field);
export const noOrganisation = () =>
  new DashboardError(
    403,
    'no_organisation',
    'You are not a member of any organisation: create one or accept an invitation.',
  );
export const membershipEnded = () =>
  new DashboardError(
    403,
    'membership_ended',
    'You are no longer a member of the organisation this session worked in: choose another organisation.',
  );
export const ownerOnlySetting = () =>
  new DashboardError(403, 'owner_only', 'Only an owner of this organisation may change how its members sign in.');
export const roleForbids = (role: string, permission: string) =>
  new DashboardError(
    403,
    'role_forbids',
    `Your role in this organisation (${role}) does not allow this (${permission}). Ask an owner or admin.`,
  );

/** Any thrown value as a DashboardError; the services' GatewayErrors keep their status and field. */
export function toDashboardError(error: unknown): DashboardError {
  if (error instanceof DashboardError) return error;
  if (error instanceof OrganisationError)
    return new DashboardError(error.status, error.code, error.message, error.field);
  if (error instanceof IdentityError)
    return new DashboardError(error.status, error.code, error.message, error.field, error.retryAfterSeconds);
  if (error instanceof TooManyLoginAttemptsError || error instanceof TooManyRegistrationsError) {
    return new DashboardError(429, 'too_many_attempts', error.message, undefined, error.retryAfterSeconds);
  }
  const gatewayError = fromFrameworkError(error);
  if (gatewayError.code === 'internal_error') return new DashboardError(500, 'internal_error', gatewayError.message);
  return new DashboardError(
    gatewayError.status,
    gatewayError.code,
    gatewayError.message,
    gatewayError.param,
    gatewayError.retryAfterSeconds,
  );
}

export function sendDashboardError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const rendered = toDashboardError(clientAbortedUpload(request, error) ? clientAbortError(request, error) : error);
  if (rendered.status >= 500) logErrorReply(request, fromFrameworkError(error), error, 'dashboard API internal error');
  if (rendered.retryAfterSeconds !== undefined) reply.header('retry-after', String(rendered.retryAfterSeconds));
  // As on the model routes: only a rate limit or a server-side fault may pass on a later try.
  reply.header('x-should-retry', String(rendered.status === 429 || rendered.status >= 500));
  return reply.code(rendered.status).send({
    error: {
      code: rendered.code,
      message: rendered.message,
      ...(rendered.field === undefined ? {} : { field: rendered.field }),
      ...(rendered.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: rendered.retryAfterSeconds }),
    },
  });
}
