/**
 * OpenAI's error body `{"error":{"message","type","param","code"}}`, with the type/code/message OpenAI
 * uses for each status, for the simulator's own refusals and its injected faults.
 */
import type { OpenAiErrorDetail } from './openai-types.js';

export function openAiErrorBody(detail: OpenAiErrorDetail): string {
  return JSON.stringify({ error: detail });
}

export function invalidRequest(message: string, param: string | null = null, code: string | null = null): string {
  return openAiErrorBody({ message, type: 'invalid_request_error', param, code });
}

/** The error OpenAI typically sends with `status` (used by the `error` and `rate-limit` faults). */
export function openAiErrorForStatus(status: number): OpenAiErrorDetail {
  switch (status) {
    case 400:
      return { message: 'Simulated bad request.', type: 'invalid_request_error', param: null, code: null };
    case 401:
      return {
        message:
          'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      };
    case 403:
      return {
        message: 'Country, region, or territory not supported',
        type: 'request_forbidden',
        param: null,
        code: 'unsupported_country_region_territory',
      };
    case 404:
      return {
        message: 'The model does not exist or you do not have access to it.',
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_found',
      };
    case 429:
      return {
        message: 'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.',
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      };
    case 500:
      return {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      };
    case 503:
      return {
        message: 'The engine is currently overloaded, please try again later.',
        type: 'server_error',
        param: null,
        code: null,
      };
    default:
      return status >= 500
        ? { message: `Simulated upstream error (HTTP ${status}).`, type: 'server_error', param: null, code: null }
        : {
            message: `Simulated request error (HTTP ${status}).`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          };
  }
}
