import type { Account } from './types';

/** An error reply of the dashboard API: `{ error: { code, message, field? } }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

let csrfToken = '';
let onUnauthenticated: () => void = () => {};
let onMembershipEnded: () => void = () => {};
let onSignInPolicy: (error: ApiError) => void = () => {};

/** The 403 codes of an organisation's sign-in policy: the person must enrol, or sign in another way. */
export const SIGN_IN_POLICY_CODES = [
  'second_factor_enrolment_required',
  'second_factor_session_required',
  'sso_required_by_organisation',
] as const;

/** Called when any call answers 401: the session ended (logout elsewhere, expiry, disabled account). */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

/** Called when a call answers 403 `membership_ended`: the person was removed from the session's organisation. */
export function setMembershipEndedHandler(handler: () => void): void {
  onMembershipEnded = handler;
}

/** Called when a call answers 403 with a sign-in policy code: the organisation requires more of this session. */
export function setSignInPolicyHandler(handler: (error: ApiError) => void): void {
  onSignInPolicy = handler;
}

/** Replies that carry a fresh CSRF token (login, registration, logout, password change) replace ours. */
function remember(body: unknown): void {
  if (typeof body === 'object' && body !== null && 'csrfToken' in body && typeof body.csrfToken === 'string') {
    csrfToken = body.csrfToken;
  }
}

async function errorFrom(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON (a proxy's error page): fall through to a generic message.
  }
  const error = (
    body as { error?: { code?: string; message?: string; field?: string; retryAfterSeconds?: number } } | null
  )?.error;
  const retryAfter = error?.retryAfterSeconds ?? (Number(response.headers.get('retry-after')) || undefined);
  return new ApiError(
    response.status,
    error?.code ?? 'http_error',
    error?.message ?? `The server answered ${response.status} ${response.statusText}.`,
    error?.field,
    retryAfter,
  );
}

/** One JSON call. Non-GET calls carry the CSRF token; a 401 tells the app the session is gone. */
export async function api<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) {
    const error = await errorFrom(response);
    if (response.status === 401 && error.code === 'not_authenticated') onUnauthenticated();
    if (response.status === 403 && error.code === 'membership_ended') onMembershipEnded();
    if (response.status === 403 && (SIGN_IN_POLICY_CODES as readonly string[]).includes(error.code))
      onSignInPolicy(error);
    throw error;
  }
  const data = (await response.json()) as T;
  remember(data);
  return data;
}

/**
 * A POST whose reply is read as it arrives (the playground's stream). Errors before the reply starts are thrown as
 * for `api`; the caller reads the body.
 */
export async function postForStream(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
  const response = await fetch(path, {
    method: 'POST',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    credentials: 'same-origin',
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) {
    const error = await errorFrom(response);
    if (response.status === 401 && error.code === 'not_authenticated') onUnauthenticated();
    throw error;
  }
  return response;
}

/** `GET /api/session`: who is logged in, and the CSRF token every later state-changing call sends. */
export async function loadSession(): Promise<Account | null> {
  const session = await api<{ account: Account | null; csrfToken: string }>('GET', '/api/session');
  return session.account;
}

/** A query string from the defined values only. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
