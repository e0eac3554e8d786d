import { GatewayError, type GatewayErrorCode } from '../../canonical/errors.js';
import type { AnthropicErrorBody } from '../../wire/anthropic-messages-wire.js';
import { headerValue, type UpstreamResponse } from '../upstream-http.js';
import { scrubSecrets } from '../../observability/scrub-secrets.js';
import { parseRetryAfter, upstreamError } from '../upstream-errors.js';

/** Anthropic's error `type` → gateway error, for errors that arrive inside a 200 stream (no status to go by). */
const STREAM_ERROR_CODES: Readonly<Record<string, GatewayErrorCode>> = {
  overloaded_error: 'upstream_unavailable',
  rate_limit_error: 'upstream_rate_limited',
  api_error: 'upstream_server_error',
  timeout_error: 'upstream_timeout',
  invalid_request_error: 'upstream_invalid_request',
  request_too_large: 'upstream_payload_too_large',
  not_found_error: 'upstream_not_found',
  authentication_error: 'upstream_auth_failed',
  permission_error: 'upstream_auth_failed',
  billing_error: 'upstream_auth_failed',
};

/** An `event: error` received after the 200: the stream is over, the client gets the mapped gateway error. */
export function anthropicStreamError(
  vendorLabel: string,
  error: { type?: string; message?: string } | undefined,
): GatewayError {
  const type = error?.type ?? 'api_error';
  const code = STREAM_ERROR_CODES[type] ?? 'upstream_server_error';
  const message =
    code === 'upstream_auth_failed'
      ? `The gateway's credentials for ${vendorLabel} were refused mid-stream (${type}). This is not a problem with your API key; please contact the operator.`
      : `${vendorLabel} reported an error mid-stream: ${scrubSecrets(error?.message ?? type)}`;
  return new GatewayError(code, message, { upstreamCode: type });
}

/** A non-2xx reply → the gateway error: status decides the code, the body gives the message and vendor type. */
export async function anthropicHttpError(
  vendorLabel: string,
  response: UpstreamResponse,
  now = Date.now(),
): Promise<GatewayError> {
  let message: string | undefined;
  let vendorCode: string | undefined;
  try {
    const parsed = JSON.parse(await response.body.text()) as Partial<AnthropicErrorBody>;
    message = typeof parsed.error?.message === 'string' ? parsed.error.message : undefined;
    vendorCode = typeof parsed.error?.type === 'string' ? parsed.error.type : undefined;
  } catch {
    // Not JSON (e.g. the 413 of the edge proxy): the status alone decides.
  }
  return upstreamError({
    vendorLabel,
    status: response.statusCode,
    message,
    vendorCode,
    retryAfterSeconds: anthropicRetryAfter(response, now),
  });
}

/**
 * Seconds to wait: `retry-after` when present; on a 429 without it, the time until the request bucket resets
 * (`anthropic-ratelimit-requests-reset` is an RFC 3339 timestamp).
 */
export function anthropicRetryAfter(
  response: Pick<UpstreamResponse, 'statusCode' | 'headers'>,
  now = Date.now(),
): number | undefined {
  const retryAfter = parseRetryAfter(headerValue(response.headers, 'retry-after'), now);
  if (retryAfter !== undefined || response.statusCode !== 429) return retryAfter;
  const reset = headerValue(response.headers, 'anthropic-ratelimit-requests-reset');
  if (reset === undefined) return undefined;
  const at = Date.parse(reset);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
