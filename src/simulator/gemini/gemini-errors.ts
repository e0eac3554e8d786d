/**
 * Gemini's Google-RPC error body `{"error":{"code","message","status","details"?}}` and the status name and
 * message it sends with each HTTP status (docs/protocols/wire-gemini.md#errors).
 */

const STATUSES: Record<number, { status: string; message: string }> = {
  400: { status: 'INVALID_ARGUMENT', message: 'Request contains an invalid argument.' },
  401: { status: 'UNAUTHENTICATED', message: 'Request had invalid authentication credentials.' },
  403: { status: 'PERMISSION_DENIED', message: 'The caller does not have permission' },
  404: { status: 'NOT_FOUND', message: 'Requested entity was not found.' },
  429: {
    status: 'RESOURCE_EXHAUSTED',
    message:
      'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.',
  },
  500: {
    status: 'INTERNAL',
    message:
      'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  },
  503: { status: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' },
  504: { status: 'DEADLINE_EXCEEDED', message: 'Deadline expired before operation could complete.' },
};

export function geminiStatusName(code: number): string {
  return STATUSES[code]?.status ?? (code >= 500 ? 'INTERNAL' : code === 409 ? 'ABORTED' : 'INVALID_ARGUMENT');
}

export function geminiErrorBody(code: number, message?: string, details?: unknown[]): string {
  const text = message ?? STATUSES[code]?.message ?? `Simulated error (HTTP ${code}).`;
  return JSON.stringify({
    error: { code, message: text, status: geminiStatusName(code), ...(details === undefined ? {} : { details }) },
  });
}

/** The error of the `error` / `rate-limit` faults; a 429 carries RetryInfo as Gemini's does. */
export function geminiFaultBody(code: number, retryAfterSeconds: number): string {
  if (code !== 429) return geminiErrorBody(code);
  return geminiErrorBody(429, undefined, [
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` },
  ]);
}

export const API_KEY_INVALID_DETAILS = [
  {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'API_KEY_INVALID',
    domain: 'googleapis.com',
    metadata: { service: 'generativelanguage.googleapis.com' },
  },
];
