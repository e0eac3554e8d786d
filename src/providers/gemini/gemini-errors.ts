import type { GatewayError } from '../../canonical/errors.js';
import { parseRetryAfter, upstreamError } from '../upstream-errors.js';
import type { GeminiError, GeminiErrorBody } from '../../wire/gemini-generate-wire.js';

/**
 * Gemini error bodies (docs/protocols/wire-gemini.md#errors) → gateway errors, by HTTP status through the shared table
 * (`upstreamError`). Two Gemini specifics:
 * - A bad or expired key comes back as 400 INVALID_ARGUMENT with ErrorInfo reason `API_KEY_INVALID`: that is
 *   the gateway's credential failing, so it is mapped as the 401 it means, never as the client's mistake.
 * - The wait before a retry is in `RetryInfo.retryDelay` ("37s"), not in a header; the header is the fallback.
 */

const CREDENTIAL_REASONS: ReadonlySet<string> = new Set([
  'API_KEY_INVALID',
  'API_KEY_EXPIRED',
  'API_KEY_SERVICE_BLOCKED',
]);

/** The `error` object of a Gemini error body; bodies wrapped in a JSON array (streaming without SSE) too. */
export function parseGeminiErrorBody(text: string): GeminiError | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  return geminiErrorOf(Array.isArray(parsed) ? parsed[0] : parsed);
}

/** `value.error` when `value` looks like a Gemini error body. */
export function geminiErrorOf(value: unknown): GeminiError | undefined {
  if (typeof value !== 'object' || value === null || !('error' in value)) return undefined;
  const error = (value as Partial<GeminiErrorBody>).error;
  return typeof error === 'object' && error !== null ? error : undefined;
}

export function geminiUpstreamError(
  error: GeminiError | undefined,
  status: number,
  vendorLabel: string,
  retryAfterHeader?: string,
): GatewayError {
  const details = Array.isArray(error?.details) ? error.details : [];
  const reason = details.find((detail) => typeof detail.reason === 'string')?.reason;
  const retryDelay = details.find((detail) => typeof detail.retryDelay === 'string')?.retryDelay;
  return upstreamError({
    vendorLabel,
    status: reason !== undefined && CREDENTIAL_REASONS.has(reason) ? 401 : status,
    message: typeof error?.message === 'string' ? error.message : undefined,
    vendorCode: error?.status ?? reason,
    retryAfterSeconds: parseRetryDelay(retryDelay) ?? parseRetryAfter(retryAfterHeader),
  });
}

/** A protobuf Duration in JSON ("7s", "1.5s", "0.250s") as whole seconds, rounded up. */
export function parseRetryDelay(value: string | undefined): number | undefined {
  const match = value === undefined ? null : /^(\d+(?:\.\d+)?)s$/.exec(value);
  return match === null ? undefined : Math.ceil(Number(match[1]));
}
