/**
 * One catalog of gateway errors. Each entry has a stable code, an HTTP status, whether a client may retry,
 * and the error `type` each client protocol uses for it. Protocol encoders render the same entry in their
 * own error shape; nothing else decides statuses.
 */

export interface ErrorCatalogEntry {
  status: number;
  /** Where Anthropic clients expect another status for the same condition (overload is 529 there). */
  anthropicStatus?: number;
  retryable: boolean;
  openaiType: string;
  anthropicType: string;
}

export const ERROR_CATALOG = {
  invalid_request: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  invalid_json: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  unsupported_content_type: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  unknown_model: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  // The prompt is larger than the model's context window: each protocol words it as its vendor does, so an agent
  // recognises it and compacts its conversation instead of failing the session.
  context_length_exceeded: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  unsupported_parameter: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  missing_api_key: {
    status: 401,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'authentication_error',
  },
  invalid_api_key: {
    status: 401,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'authentication_error',
  },
  expired_api_key: {
    status: 401,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'authentication_error',
  },
  // Anthropic's `billing_error`, not `permission_error`: Claude Code shows a permission error as a failed login.
  insufficient_balance: {
    status: 403,
    retryable: false,
    openaiType: 'insufficient_balance',
    anthropicType: 'billing_error',
  },
  // A key's own spend limit (docs/architecture.md#key-scopes-and-limits) is reached: like insufficient_balance, but for
  // the key, with when it resets. Anthropic answers its own reached spend limit with a 400: Claude Code shows that
  // message as it is, and any 403 as a failed login; `billing_error` keeps it from resending a 400 without a beta.
  key_spend_limit_reached: {
    status: 403,
    anthropicStatus: 400,
    retryable: false,
    openaiType: 'insufficient_quota',
    anthropicType: 'billing_error',
  },
  // A project's or organisation's spend limit for a period (docs/billing.md#spend-limits) is reached: answered like a
  // key's, the message naming the limit's level and period.
  spend_limit_reached: {
    status: 403,
    anthropicStatus: 400,
    retryable: false,
    openaiType: 'insufficient_quota',
    anthropicType: 'billing_error',
  },
  permission_denied: {
    status: 403,
    retryable: false,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
  },
  not_found: { status: 404, retryable: false, openaiType: 'invalid_request_error', anthropicType: 'not_found_error' },
  method_not_allowed: {
    status: 405,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  expectation_failed: {
    status: 417,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  conflict: {
    status: 409,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  payload_too_large: {
    status: 413,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'request_too_large',
  },
  rate_limit_exceeded: {
    status: 429,
    retryable: true,
    openaiType: 'rate_limit_error',
    anthropicType: 'rate_limit_error',
  },
  rate_limiter_unavailable: {
    status: 503,
    anthropicStatus: 529,
    retryable: true,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
  },
  // The gateway's own database cannot be reached (an outage, not a fault of the request): retry shortly.
  service_unavailable: {
    status: 503,
    anthropicStatus: 529,
    retryable: true,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
  },
  // The gateway's settlement journal cannot be written, so a settlement the database refused could not be kept:
  // paid requests wait until it can (an outage of the gateway's own disk, like the database's).
  settlement_journal_unavailable: {
    status: 503,
    anthropicStatus: 529,
    retryable: true,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
  },
  internal_error: { status: 500, retryable: true, openaiType: 'server_error', anthropicType: 'api_error' },
  // Operations: a draining instance, and what the HTTP parser refuses (slow or oversized request heads).
  shutting_down: {
    status: 503,
    anthropicStatus: 529,
    retryable: true,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
  },
  request_timeout: {
    status: 408,
    retryable: true,
    openaiType: 'invalid_request_error',
    anthropicType: 'timeout_error',
  },
  headers_too_large: {
    status: 431,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  // Upstream failures, mapped by the vendor's HTTP status (docs/protocols/translation.md#errors). A vendor's 401/403
  // means the gateway's own credential is bad: never blamed on the client's key.
  upstream_invalid_request: {
    status: 400,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
  },
  upstream_auth_failed: { status: 502, retryable: false, openaiType: 'server_error', anthropicType: 'api_error' },
  upstream_not_found: {
    status: 404,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'not_found_error',
  },
  upstream_payload_too_large: {
    status: 413,
    retryable: false,
    openaiType: 'invalid_request_error',
    anthropicType: 'request_too_large',
  },
  upstream_rate_limited: {
    status: 429,
    retryable: true,
    openaiType: 'rate_limit_error',
    anthropicType: 'rate_limit_error',
  },
  upstream_server_error: { status: 500, retryable: true, openaiType: 'server_error', anthropicType: 'api_error' },
  upstream_bad_response: { status: 502, retryable: true, openaiType: 'server_error', anthropicType: 'api_error' },
  upstream_unavailable: {
    status: 503,
    anthropicStatus: 529,
    retryable: true,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
  },
  upstream_timeout: { status: 504, retryable: true, openaiType: 'server_error', anthropicType: 'timeout_error' },
} as const satisfies Record<string, ErrorCatalogEntry>;

export type GatewayErrorCode = keyof typeof ERROR_CATALOG;

export interface GatewayErrorOptions {
  /** The request field at fault, when there is one (OpenAI's `param`). */
  param?: string;
  /** The vendor's error code or type, kept for OpenAI's `code` field. */
  upstreamCode?: string;
  /** Seconds the client should wait before retrying (sets `retry-after`). */
  retryAfterSeconds?: number;
  /**
   * Machine-readable details for the client's SDK (Anthropic's `error.details`, e.g. `{error_code:
   * "thread_unsupported_request"}`, which the SDK turns into a typed error it can recover from).
   */
  details?: Readonly<Record<string, unknown>>;
  /** For `context_length_exceeded`: the counts each protocol's wording names. */
  contextOverflow?: ContextOverflow;
  cause?: unknown;
}

/** A prompt over the model's window: its input tokens and the window, when known (a vendor may not say them). */
export interface ContextOverflow {
  promptTokens?: number;
  contextWindow?: number;
}

export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly upstreamCode: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly contextOverflow: ContextOverflow | undefined;

  constructor(code: GatewayErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    const entry: ErrorCatalogEntry = ERROR_CATALOG[code];
    this.status = entry.status;
    this.retryable = entry.retryable;
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.upstreamCode = options.upstreamCode;
    this.details = options.details;
    this.contextOverflow = options.contextOverflow;
  }

  get entry(): ErrorCatalogEntry {
    return ERROR_CATALOG[this.code];
  }
}

/** Any thrown value as a GatewayError; unknown faults become a 500 whose message reveals nothing internal. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError('internal_error', 'The gateway hit an internal error. Please retry.', { cause: error });
}

/** The refusal of a body that is not JSON, or that carries keys the secure parser refuses (prototype keys). */
export function invalidJsonBody(): GatewayError {
  return new GatewayError('invalid_json', 'The request body is not valid JSON.');
}

export function invalidRequest(message: string, param?: string): GatewayError {
  return new GatewayError('invalid_request', message, param === undefined ? {} : { param });
}
