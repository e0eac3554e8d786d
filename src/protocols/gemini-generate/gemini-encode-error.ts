import { countedOverflow } from '../../canonical/context-window.js';
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

/** The HTTP code google.rpc pairs with each status name (google/rpc/code.proto), as Google's own bodies do. */
const CANONICAL_CODES: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

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
  return {
    error: { code: error.status, message: geminiMessage(error), status: googleStatusName(error.status), details },
  };
}

/** Google's own wording for a prompt over the model's window; the gateway's message for everything else. */
function geminiMessage(error: GatewayError): string {
  const overflow = countedOverflow(error);
  if (overflow === undefined) return error.message;
  return `The input token count (${overflow.promptTokens}) exceeds the maximum number of tokens allowed (${overflow.contextWindow}).`;
}

/**
 * The error chunk of a stream that already answered 200. Its `code` is not an HTTP status any more, so it is the
 * one Google pairs with the status name (503 with `UNAVAILABLE`, never the catalog's 502): @google/genai raises it
 * as the ApiError's status and Gemini CLI retries by it.
 */
export function encodeGeminiStreamError(error: GatewayError): GeminiErrorBody {
  const body = encodeGeminiError(error);
  const status = googleStatusName(error.status);
  return { error: { ...body.error, code: CANONICAL_CODES[status] ?? body.error.code } };
}
