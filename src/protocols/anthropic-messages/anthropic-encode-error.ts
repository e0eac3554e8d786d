import { countedOverflow } from '../../canonical/context-window.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { AnthropicErrorBody } from '../../wire/anthropic-messages-wire.js';

/**
 * Anthropic's own words for an exhausted balance. Claude Code reports a refusal whose message holds them as a
 * billing error ("Credit balance is too low"); any other 403 it shows as "Failed to authenticate", whatever the type.
 */
const ANTHROPIC_BALANCE_WORDS = 'Credit balance is too low.';
/** Anthropic's own words for a reached spend limit, before the key's limit, spend and reset. */
const ANTHROPIC_SPEND_LIMIT_WORDS = 'You have reached your specified API usage limits.';

/**
 * A gateway error in Anthropic's shape (docs/protocols/wire-anthropic.md#errors), with the request's id as
 * `request_id` on a reply's body; an in-stream `error` event has none, as Anthropic's has none.
 */
export function renderAnthropicError(error: GatewayError, requestId: string | null = null): AnthropicErrorBody {
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type: error.entry.anthropicType, message: anthropicMessage(error) },
  };
  if (requestId !== null) body.request_id = requestId;
  if (error.details !== undefined) body.error.details = error.details;
  return body;
}

/**
 * Anthropic's own wording where a client acts on it: Claude Code compacts its conversation on "prompt is too long:
 * N tokens > M maximum" and reads the two counts to know how much to drop.
 */
function anthropicMessage(error: GatewayError): string {
  if (error.code === 'insufficient_balance') return `${ANTHROPIC_BALANCE_WORDS} ${error.message}`;
  if (error.code === 'key_spend_limit_reached' || error.code === 'spend_limit_reached')
    return `${ANTHROPIC_SPEND_LIMIT_WORDS} ${error.message}`;
  const overflow = countedOverflow(error);
  if (overflow !== undefined)
    return `prompt is too long: ${overflow.promptTokens} tokens > ${overflow.contextWindow} maximum`;
  return error.message;
}
