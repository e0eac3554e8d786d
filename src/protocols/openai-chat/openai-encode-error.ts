import { countedOverflow } from '../../canonical/context-window.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { OpenAIErrorBody } from '../../wire/openai-chat-wire.js';

/** A gateway error in OpenAI's shape: all four keys present, `code` the stable catalog code. */
export function encodeOpenAIError(error: GatewayError): OpenAIErrorBody {
  const overflow = countedOverflow(error);
  // OpenAI's own words and field for a prompt over the window (`code` is already its `context_length_exceeded`).
  const message =
    overflow === undefined
      ? error.message
      : `This model's maximum context length is ${overflow.contextWindow} tokens. However, your messages resulted in ${overflow.promptTokens} tokens. Please reduce the length of the messages.`;
  return {
    error: {
      message,
      type: error.entry.openaiType,
      param: error.param ?? (error.code === 'context_length_exceeded' ? 'messages' : null),
      code: error.code,
    },
  };
}
