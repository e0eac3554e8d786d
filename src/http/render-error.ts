import type { FastifyReply } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { renderAnthropicError } from '../protocols/anthropic-messages/anthropic-encode-error.js';
import { encodeOpenAIError } from '../protocols/openai-chat/openai-encode-error.js';
import type { ClientProtocol } from './request-context.js';

/** Fastify's own errors (body parsing, limits) as catalog errors, so they render like any other. */
export function fromFrameworkError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = (error as { code?: string } | null)?.code;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_json', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('unsupported_content_type', "Unsupported Content-Type: send the body as JSON with 'Content-Type: application/json'.");
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('payload_too_large', 'The request body is larger than this gateway accepts.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', 'The Content-Length header does not match the body.');
  }
  if ((error as SyntaxError | null) instanceof SyntaxError) return new GatewayError('invalid_json', 'The request body is not valid JSON.');
  return new GatewayError('internal_error', 'The gateway hit an internal error. Please retry.', { cause: error });
}

export interface RenderedError {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** The same catalog entry in each client protocol's error shape. */
export function renderError(error: GatewayError, protocol: ClientProtocol): RenderedError {
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
  if (protocol === 'anthropic') {
    return {
      status: error.entry.anthropicStatus ?? error.status,
      body: renderAnthropicError(error),
      headers,
    };
  }
  return { status: error.status, body: encodeOpenAIError(error), headers };
}

export function sendError(reply: FastifyReply, error: GatewayError, protocol: ClientProtocol): FastifyReply {
  const rendered = renderError(error, protocol);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}
