import type { GatewayError } from '../../canonical/errors.js';
import type { OpenAIErrorBody } from '../../wire/openai-chat-wire.js';

/** A gateway error in OpenAI's shape: all four keys present, `code` the stable catalog code. */
export function encodeOpenAIError(error: GatewayError): OpenAIErrorBody {
  return {
    error: {
      message: error.message,
      type: error.entry.openaiType,
      param: error.param ?? null,
      code: error.code,
    },
  };
}
