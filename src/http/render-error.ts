import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, invalidJsonBody } from '../canonical/errors.js';
import type { OutageLog } from '../observability/outage-log.js';
import { renderAnthropicError } from '../protocols/anthropic-messages/anthropic-encode-error.js';
import { encodeGeminiError } from '../protocols/gemini-generate/gemini-encode-error.js';
import { encodeOpenAIError } from '../protocols/openai-chat/openai-encode-error.js';
import { encodeResponsesError } from '../protocols/openai-responses/responses-encode-error.js';
import { isStorageUnavailable } from '../storage/storage-unavailable.js';
import { TextWithNulError } from '../storage/types.js';
import type { ErrorShape } from './request-context.js';

/** What `retry-after` suggests while the database cannot be reached: long enough for a restart or a failover. */
const STORAGE_RETRY_AFTER_SECONDS = 5;

/**
 * Fastify's own errors (body parsing, limits) as catalog errors, so they render like any other; a database that
 * cannot be reached is the 503 `service_unavailable` (529 `overloaded_error` for Anthropic clients), never a 500.
 */
export function fromFrameworkError(error: unknown): GatewayError {
  if (error instanceof GatewayError && !(error.code === 'internal_error' && isStorageUnavailable(error.cause)))
    return error;
  if (isStorageUnavailable(error)) {
    return new GatewayError(
      'service_unavailable',
      'The gateway cannot reach its database right now. Please retry in a few seconds.',
      {
        retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS,
        cause: error instanceof GatewayError ? error.cause : error,
      },
    );
  }
  // The services name the field first; this is the same refusal on a path they do not check (both backends alike).
  if (error instanceof TextWithNulError)
    return new GatewayError('invalid_request', `${error.message} Remove it from the request.`);
  const code = (error as { code?: string } | null)?.code;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidJsonBody();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError(
        'unsupported_content_type',
        "Unsupported Content-Type: send the body as JSON with 'Content-Type: application/json'.",
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('payload_too_large', 'The request body is larger than this gateway accepts.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', 'The Content-Length header does not match the body.');
  }
  if ((error as SyntaxError | null) instanceof SyntaxError) return invalidJsonBody();
  return new GatewayError('internal_error', 'The gateway hit an internal error. Please retry.', { cause: error });
}

/**
 * Whether the request failed because its client went away while sending the body: Node destroys the request
 * stream with `aborted` (code ECONNRESET, which would otherwise read as a database outage). The client's doing,
 * not a fault of the gateway: logged at info and answered into the void.
 */
export function clientAbortedUpload(request: FastifyRequest, error: unknown): boolean {
  if (error instanceof GatewayError) return false;
  const raw = request.raw;
  return raw.readableAborted && !raw.complete && (raw.socket === null || raw.socket.destroyed);
}

/** The answer to an upload its client abandoned (nobody reads it), logged at info as the client's doing. */
export function clientAbortError(request: FastifyRequest, error: unknown): GatewayError {
  request.log.info(
    { reason: error instanceof Error ? error.message : String(error) },
    'client closed the connection during the request body',
  );
  return new GatewayError('invalid_request', 'The client closed the connection before the request body was complete.');
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Where answers refused by a dependency outage are counted (one log line per interval, not per request). */
    outageLog: OutageLog | null;
  }
}

/**
 * Logs a failed request's error as it deserves: an outage of the database or of Redis is counted in the outage
 * log (a line per interval); another server-side fault is an error line with its cause; vendor failures are
 * logged where they happen, and client errors not at all.
 */
export function logErrorReply(
  request: FastifyRequest,
  error: GatewayError,
  original: unknown,
  message = 'internal error',
): void {
  const dependency =
    error.code === 'service_unavailable'
      ? 'storage'
      : error.code === 'rate_limiter_unavailable'
        ? 'redis'
        : error.code === 'settlement_journal_unavailable'
          ? 'settlement journal'
          : undefined;
  if (dependency !== undefined) {
    const outages = request.server.outageLog;
    if (outages === null) request.log.warn({ err: error.cause ?? original }, `${dependency} unavailable`);
    else outages.record(dependency, 'requests answered 503', error.cause ?? original);
    return;
  }
  if (error.status >= 500 && !error.code.startsWith('upstream_'))
    request.log.error({ err: error.cause ?? original }, message);
}

export interface RenderedError {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/**
 * What a retryable error without its own `retry-after` suggests: the SDKs wait this long (instead of their own
 * backoff) before the next try.
 */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/**
 * Whether and when to retry, in the headers the SDKs read before their own status rules: `x-should-retry: false` on
 * an error no retry can fix (a bad request, key or balance), so Claude Code and the Anthropic and OpenAI SDKs fail at
 * once instead of retrying for minutes; `x-should-retry: true` and `retry-after` on one that may pass later.
 */
export function retryHeaders(error: GatewayError): Record<string, string> {
  if (!error.retryable) return { 'x-should-retry': 'false' };
  return {
    'x-should-retry': 'true',
    'retry-after': String(error.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS),
  };
}

/**
 * The same catalog entry in each client protocol's error shape, with the retry headers. Anthropic's carries the
 * request's id in its body (`request_id`) and its `request-id` header, as Anthropic's API does.
 */
export function renderError(error: GatewayError, protocol: ErrorShape, requestId: string | null = null): RenderedError {
  const headers = retryHeaders(error);
  if (protocol === 'anthropic') {
    if (requestId !== null) headers['request-id'] = requestId;
    return {
      status: error.entry.anthropicStatus ?? error.status,
      body: renderAnthropicError(error, requestId),
      headers,
    };
  }
  if (protocol === 'google') return { status: error.status, body: encodeGeminiError(error), headers };
  if (protocol === 'openai-responses') return { status: error.status, body: encodeResponsesError(error), headers };
  return { status: error.status, body: encodeOpenAIError(error), headers };
}

/** Sends an error reply; a `retry-after` already on the reply (the rate limiter's) is kept. */
export function sendError(reply: FastifyReply, error: GatewayError, protocol: ErrorShape): FastifyReply {
  const rendered = renderError(error, protocol, reply.request.id);
  if (reply.hasHeader('retry-after')) delete rendered.headers['retry-after'];
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}
