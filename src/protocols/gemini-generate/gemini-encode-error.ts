import type { GatewayError } from '../../canonical/errors.js';
import type { GeminiErrorBody, GeminiErrorDetail } from '../../wire/gemini-generate-wire.js';

/**
 * google.rpc status names by HTTP status (docs/protocols/wire-gemini.md#error-bodies-to-clients). The HTTP status of
 * the reply is the catalog's, and `code` repeats it, as Google does.
 */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  417: 'FAILED_PRECONDITION',
  429: 'RESOURCE_EXHAUSTED',
  431: 'INVALID_ARGUMENT',
  499: 'CANCELLED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export function googleStatusName(status: number): string {
  return STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

/**
 * A gateway error in Google's shape: `{"error": {code, message, status, details}}`. `details` holds an ErrorInfo
 * whose `reason` is the gateway's stable code (and `metadata.param` the field at fault), and a RetryInfo when
 * the client should wait: the SDKs read both.
 */
export function encodeGeminiError(error: GatewayError): GeminiErrorBody {
  const details: GeminiErrorDetail[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: error.code.toUpperCase(),
      domain: 'tollgate',
      ...(error.param === undefined ? {} : { metadata: { param: error.param } }),
    },
  ];
  if (error.retryAfterSeconds !== undefined)
    details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${error.retryAfterSeconds}s` });
  return { error: { code: error.status, message: error.message, status: googleStatusName(error.status), details } };
}
