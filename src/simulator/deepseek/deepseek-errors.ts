/**
 * DeepSeek's errors: the OpenAI body shape with DeepSeek's own messages per status
 * (docs/protocols/wire-deepseek.md#errors), including 402 for an exhausted balance, which OpenAI has no equivalent of.
 */
import { openAiErrorBody } from '../openai/openai-errors.js';

const ERRORS: Record<number, { message: string; type: string }> = {
  400: { message: 'Invalid Format: the request body format is invalid.', type: 'invalid_request_error' },
  401: { message: 'Authentication Fails, Your api key is invalid', type: 'authentication_error' },
  402: { message: 'Insufficient Balance', type: 'unknown_error' },
  422: { message: 'Invalid Parameters', type: 'invalid_request_error' },
  429: { message: 'Rate Limit Reached', type: 'rate_limit_reached_error' },
  500: { message: 'Internal Server Error', type: 'internal_error' },
  503: { message: 'Server Overloaded, please try again later.', type: 'service_unavailable_error' },
};

export function deepSeekErrorBody(status: number, message?: string): string {
  const known = ERRORS[status] ?? {
    message: `Simulated error (HTTP ${status}).`,
    type: status >= 500 ? 'internal_error' : 'invalid_request_error',
  };
  return openAiErrorBody({
    message: message ?? known.message,
    type: known.type,
    param: null,
    code: 'invalid_request_error',
  });
}
