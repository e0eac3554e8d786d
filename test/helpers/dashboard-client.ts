/**
 * A browser-like client of the dashboard API for tests: keeps the `tg_session` cookie like a cookie jar and
 * sends the CSRF token it was last given on state-changing calls (unless told not to).
 */
export interface DashboardReply {
  status: number;
  json: any;
  text: string;
  headers: Headers;
  setCookies: string[];
}

export interface CallOptions {
  /** `false`: send no CSRF header; a string: send that one. Default: the token last received. */
  csrf?: boolean | string;
  headers?: Record<string, string>;
}

export class DashboardClient {
  cookie: string | undefined;
  csrfToken: string | undefined;

  constructor(readonly baseUrl: string) {}

  async call(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<DashboardReply> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie !== undefined) headers.cookie = `tg_session=${this.cookie}`;
    const csrf =
      options.csrf === undefined || options.csrf === true
        ? this.csrfToken
        : options.csrf === false
          ? undefined
          : options.csrf;
    if (method !== 'GET' && csrf !== undefined) headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const setCookies = response.headers.getSetCookie();
    for (const line of setCookies) {
      const match = /^tg_session=([^;]*)/.exec(line);
      if (match !== null) this.cookie = match[1] === '' ? undefined : match[1];
    }
    const text = await response.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (json !== undefined && typeof json === 'object' && json !== null && typeof json.csrfToken === 'string')
      this.csrfToken = json.csrfToken;
    return { status: response.status, json, text, headers: response.headers, setCookies };
  }

  get(path: string, options?: CallOptions) {
    return this.call('GET', path, undefined, options);
  }

  post(path: string, body?: unknown, options?: CallOptions) {
    return this.call('POST', path, body, options);
  }

  /** A first visit: the visitor cookie and its CSRF token. */
  async open(): Promise<DashboardReply> {
    return this.get('/api/session');
  }

  async register(email: string, password: string): Promise<DashboardReply> {
    if (this.csrfToken === undefined) await this.open();
    return this.post('/api/auth/register', { email, password });
  }

  async login(email: string, password: string): Promise<DashboardReply> {
    if (this.csrfToken === undefined) await this.open();
    return this.post('/api/auth/login', { email, password });
  }
}

let counter = 0;
export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}${++counter}-${Date.now()}@example.com`;
}

export const PASSWORD = 'correct horse battery staple';
