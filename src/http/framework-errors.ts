import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { isGoogleClient } from './request-context.js';
import { pathOf, renderPathError, type UnmatchedRequests } from './unmatched-requests.js';

/**
 * Longest path parameter the router hands to a route. Far above any real id (key and response ids are under 40
 * characters, model names under 100), so an over-long id still reaches its route and gets the protocol's own
 * "not found" answer; only past this does the router refuse it (answered by `answerFrameworkError`). The URL as
 * a whole stays bounded by the server's header size limit.
 */
export const MAX_PARAM_LENGTH = 1_000;

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route or hook runs (a path with a malformed
 * percent-escape, a parameter past MAX_PARAM_LENGTH), answered in the shape of the path's protocol like every
 * other error, never in fastify's own `{statusCode, error, message}`.
 */
export function answerFrameworkError(
  unmatched: UnmatchedRequests,
  error: Error & { code?: string },
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  // The onRequest hooks do not run for these requests: what they would have set is set here.
  reply.header('x-request-id', request.id);
  // A parameter too long for any route to take: no route serves this URL (404, or 405 for a wrong method).
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return unmatched.answer(request, reply);
  const rendered = renderPathError(
    frameworkError(error, request),
    pathOf(request.url),
    isGoogleClient(request),
    request.id,
  );
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

function frameworkError(error: Error & { code?: string }, request: FastifyRequest): GatewayError {
  if (error.code === 'FST_ERR_BAD_URL') {
    return new GatewayError(
      'invalid_request',
      "The request path is not a valid URL: a percent-escape is malformed or does not decode to UTF-8 (write '%' itself as %25).",
    );
  }
  // No route declares an async constraint, so nothing else should arrive here; if it does, say nothing internal.
  request.log.error({ err: error }, 'router error');
  return new GatewayError('internal_error', 'The gateway hit an internal error. Please retry.', { cause: error });
}
