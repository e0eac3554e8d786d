import { GatewayError, type GatewayErrorCode } from '../canonical/errors.js';
import { scrubSecrets } from '../observability/scrub-secrets.js';
import { vendorContextOverflow } from './vendor-context-overflow.js';

/**
 * Vendor HTTP status → gateway error code (docs/protocols/translation.md#errors): status first, as both client SDKs do.
 */
export function upstreamErrorCode(status: number): GatewayErrorCode {
  if (status === 400 || status === 422) return 'upstream_invalid_request';
  if (status === 401 || status === 403) return 'upstream_auth_failed';
  if (status === 402) return 'upstream_auth_failed';
  if (status === 404) return 'upstream_not_found';
  if (status === 408 || status === 504) return 'upstream_timeout';
  if (status === 413) return 'upstream_payload_too_large';
  if (status === 429) return 'upstream_rate_limited';
  if (status === 503 || status === 529) return 'upstream_unavailable';
  if (status >= 500) return 'upstream_server_error';
  return 'upstream_bad_response';
}

export interface UpstreamErrorDetails {
  vendorLabel: string;
  status: number;
  message: string | undefined;
  vendorCode: string | undefined;
  retryAfterSeconds: number | undefined;
}

/**
 * The client-facing error for a vendor's error reply. The vendor's message is kept for 4xx (it explains the
 * client's mistake) but credentials problems are reworded: they are the operator's, not the client's.
 */
export function upstreamError(details: UpstreamErrorDetails): GatewayError {
  const vendorMessage = scrubSecrets(details.message ?? `HTTP ${details.status}`);
  // A prompt over the window keeps its own code, so the client gets its vendor's words for it and compacts.
  const contextOverflow = vendorContextOverflow(details.status, details.message, details.vendorCode);
  if (contextOverflow !== undefined)
    return new GatewayError('context_length_exceeded', `${details.vendorLabel} refused the prompt: ${vendorMessage}`, {
      contextOverflow,
      ...(details.vendorCode === undefined ? {} : { upstreamCode: details.vendorCode }),
    });
  const code = upstreamErrorCode(details.status);
  const message =
    code === 'upstream_auth_failed'
      ? `The gateway's credentials for ${details.vendorLabel} were refused (HTTP ${details.status}). This is not a problem with your API key; please contact the operator.`
      : `${details.vendorLabel} returned HTTP ${details.status}: ${vendorMessage}`;
  return new GatewayError(code, message, {
    ...(details.vendorCode === undefined ? {} : { upstreamCode: details.vendorCode }),
    ...(details.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: details.retryAfterSeconds }),
  });
}

/** `retry-after` as whole seconds (it may be seconds or an HTTP date). */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
