import type { GatewayError } from '../../canonical/errors.js';
import type { AnthropicErrorBody } from '../../wire/anthropic-messages-wire.js';

/** A gateway error in Anthropic's shape (docs/protocols/wire-anthropic.md#errors). */
export function renderAnthropicError(error: GatewayError): AnthropicErrorBody {
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type: error.entry.anthropicType, message: error.message },
  };
  if (error.details !== undefined) body.error.details = error.details;
  return body;
}
