/**
 * Anthropic's error body `{"type":"error","error":{"type","message"},"request_id"}` and the error type and
 * message it sends with each status (docs/protocols/wire-anthropic.md#errors), including 529 `overloaded_error`.
 */

const TYPES: Record<number, { type: string; message: string }> = {
  400: { type: 'invalid_request_error', message: 'Simulated bad request.' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  402: { type: 'billing_error', message: 'Your credit balance is too low to access the Anthropic API.' },
  403: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  404: { type: 'not_found_error', message: 'Not found' },
  413: { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
  429: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' },
  500: { type: 'api_error', message: 'Internal server error' },
  504: { type: 'timeout_error', message: 'Request timed out' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

export function anthropicErrorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId });
}

export function anthropicErrorForStatus(status: number, requestId: string): string {
  const known =
    TYPES[status] ??
    (status >= 500
      ? { type: 'api_error', message: `Simulated upstream error (HTTP ${status}).` }
      : { type: 'invalid_request_error', message: `Simulated request error (HTTP ${status}).` });
  return anthropicErrorBody(known.type, known.message, requestId);
}

/** The in-stream form: the same body without a request id (docs/protocols/wire-anthropic.md#stream). */
export function anthropicStreamError(status: number): string {
  const known = TYPES[status] ?? {
    type: status >= 500 ? 'api_error' : 'invalid_request_error',
    message: `Simulated error (HTTP ${status}).`,
  };
  return JSON.stringify({ type: 'error', error: known });
}
