import type { GatewayError } from '../../canonical/errors.js';
import type { OpenAIErrorBody } from '../../wire/openai-chat-wire.js';
import { encodeOpenAIError } from '../openai-chat/openai-encode-error.js';

/**
 * Errors of the Responses API have the chat route's shape (`{error: {message, type, param, code}}`,
 * docs/protocols/wire-openai-responses.md#errors): the same catalog entry, the same rendering. In a stream the same
 * fields make the `error` event and `response.failed`'s `response.error`.
 */
export function encodeResponsesError(
  error: GatewayError,
): OpenAIErrorBody & { error: { code: string; message: string; param: string | null } } {
  const body = encodeOpenAIError(error);
  const code = String(body.error.code ?? error.code);
  // The Responses API's own words for a prompt over the window, naming no counts; Codex acts on the code.
  if (error.code === 'context_length_exceeded')
    return { error: { ...body.error, code, message: RESPONSES_OVERFLOW_WORDS, param: error.param ?? 'input' } };
  return { error: { ...body.error, code, param: body.error.param ?? null } };
}

const RESPONSES_OVERFLOW_WORDS =
  'Your input exceeds the context window of this model. Please adjust your input and try again.';

/** The codes `response.failed`'s `response.error.code` may take (`ResponseError['code']` of the openai SDK). */
export type ResponseErrorCode = 'server_error' | 'rate_limit_exceeded';

/**
 * A gateway error as `response.failed`'s `response.error`: its `code` comes from the published enum, which has
 * no room for the gateway's catalog codes (the `error` event before it carries those), so a client switching on
 * it sees a value it knows: `rate_limit_exceeded` for a rate limit, `server_error` for anything else.
 */
export function encodeResponseFailure(error: GatewayError): { code: ResponseErrorCode; message: string } {
  const rateLimited = error.code === 'rate_limit_exceeded' || error.code === 'upstream_rate_limited';
  return { code: rateLimited ? 'rate_limit_exceeded' : 'server_error', message: error.message };
}
