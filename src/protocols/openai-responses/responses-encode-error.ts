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
  return { error: { ...body.error, code: String(body.error.code ?? error.code), param: body.error.param ?? null } };
}
