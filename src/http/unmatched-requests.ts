import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { nextRequestId } from '../ids/request-id.js';
import { renderError, retryHeaders, type RenderedError } from './render-error.js';
import { isGoogleClient, type ErrorShape } from './request-context.js';

/**
 * Answers for requests no route serves, in the shape of the protocol their path belongs to, never Node's bare
 * replies or HTML: an unknown path is a JSON 404, a known path asked with another method a 405 with `Allow`, a
 * request without `Host` a 400 and an `Expect` the server cannot meet a 417. Clients parse these bodies (the SDKs
 * raise typed errors from them), so each is in its caller's shape:
 *
 * | path                                  | shape     |
 * |---------------------------------------|-----------|
 * | `/v1/messages`, `/v1/messages/…`      | Anthropic |
 * | `/v1beta/…`, `/v1/models/{m}:{method}` | Google    |
 * | `/v1/models`, `/v1/models/{m}`        | Google for a Google SDK, else OpenAI |
 * | `/api/…`                              | dashboard |
 * | other `/v1/…` and anything else       | OpenAI    |
 */

export type PathProtocol = ErrorShape | 'dashboard';

export function protocolOfPath(path: string, googleClient = false): PathProtocol {
  // The model list and model routes answer a Google SDK in its own shape (`googleClients`), so do their errors.
  if (googleClient && /^\/v1\/models(?:\/[^/]*)?$/.test(path)) return 'google';
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path === '/v1beta' || path.startsWith('/v1beta/')) return 'google';
  if (/^\/v1\/(?:models|tunedModels)\/[^/]+:[A-Za-z]+$/.test(path)) return 'google';
  if (path === '/api' || path.startsWith('/api/')) return 'dashboard';
  return 'openai';
}

/** An error in the shape of `path`'s protocol; the dashboard's is `{"error": {"code", "message"}}` (docs/dashboard-api.md). */
export function renderPathError(
  error: GatewayError,
  path: string,
  googleClient = false,
  requestId: string | null = null,
): RenderedError {
  const protocol = protocolOfPath(path, googleClient);
  if (protocol !== 'dashboard') return renderError(error, protocol, requestId);
  // As every reply of the dashboard API (docs/dashboard-api.md).
  const headers: Record<string, string> = { 'cache-control': 'no-store', ...retryHeaders(error) };
  return { status: error.status, body: { error: { code: error.code, message: error.message } }, headers };
}

/**
 * The registered routes by method, matched against concrete paths. Hand-written because fastify can tell whether
 * a route pattern exists (`hasRoute`) but not which methods a concrete URL has routes for, which a 405 needs.
 * Patterns use find-my-way's syntax as this app writes them: `:param`, `:param(regex)`, `::` for a literal colon,
 * and a trailing `*`. The SPA's catch-all `/*` is left out: it would make every path a known one.
 */
export class RouteTable {
  private readonly routes: Array<{ methods: readonly string[]; pattern: RegExp }> = [];

  add(methods: string | readonly string[], url: string): void {
    if (url === '/*' || url === '*') return;
    this.routes.push({ methods: typeof methods === 'string' ? [methods] : methods, pattern: patternToRegExp(url) });
  }

  /** Methods with a route for `path` (HEAD with GET), in a stable order; empty when the path is unknown. */
  allowedMethods(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) {
      if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    }
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }
}

export function patternToRegExp(url: string): RegExp {
  let source = '';
  for (let index = 0; index < url.length; index++) {
    const char = url[index]!;
    if (char === ':' && url[index + 1] === ':') {
      source += ':';
      index++;
    } else if (char === ':') {
      let end = index + 1;
      while (end < url.length && /[A-Za-z0-9_]/.test(url[end]!)) end++;
      if (url[end] === '(') {
        // A regex parameter: its expression up to the matching parenthesis, anchors dropped.
        let depth = 0;
        let close = end;
        for (; close < url.length; close++) {
          if (url[close] === '(') depth++;
          else if (url[close] === ')' && --depth === 0) break;
        }
        source += `(?:${url
          .slice(end + 1, close)
          .replace(/^\^/, '')
          .replace(/\$$/, '')})`;
        index = close;
      } else {
        source += '[^/]+';
        index = end - 1;
      }
    } else if (char === '*') {
      source += '.*';
    } else {
      source += char.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}/?$`);
}

/**
 * The path of a request's URL, without the query string (which may carry a credential). An absolute-form target
 * (`GET http://host/v1/models`, as proxies send it) loses its scheme and host: the router matches it by its path.
 */
export function pathOf(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0]!.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/, '');
  return path === '' ? '/' : path;
}

export interface UnmatchedRequests {
  /** Answers a request without `Host` (returns true), or returns false; run first on every request. */
  rejectMissingHost(request: FastifyRequest, reply: FastifyReply): boolean;
  /** The 404 or 405 of a request no route serves (also when its body failed to parse first). */
  answer(request: FastifyRequest, reply: FastifyReply): FastifyReply;
}

/** Registers the 404/405 answers (collecting every route registered after this call) and the `Expect` answer. */
export function registerUnmatchedRequests(app: FastifyInstance): UnmatchedRequests {
  const table = new RouteTable();
  app.addHook('onRoute', (route: RouteOptions) => table.add(route.method, route.url));
  app.setNotFoundHandler((request, reply) => answerUnmatched(table, request, reply));
  // Node answers an Expect it does not know with a bare 417 unless someone listens.
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const path = pathOf(request.url);
    const error = new GatewayError(
      'expectation_failed',
      `The Expect header (${String(request.headers.expect).slice(0, 100)}) cannot be met: only 100-continue is supported.`,
    );
    const requestId = nextRequestId();
    writeRaw(response, renderPathError(error, path, false, requestId), {
      connection: 'close',
      'x-request-id': requestId,
    });
  });
  return {
    rejectMissingHost(request, reply) {
      if (
        request.headers.host !== undefined ||
        request.raw.httpVersionMajor !== 1 ||
        request.raw.httpVersionMinor !== 1
      )
        return false;
      const rendered = renderPathError(
        new GatewayError('invalid_request', 'The request has no Host header, which HTTP/1.1 requires.'),
        pathOf(request.url),
        false,
        request.id,
      );
      void reply.code(rendered.status).headers(rendered.headers).header('connection', 'close').send(rendered.body);
      return true;
    },
    answer: (request, reply) => answerUnmatched(table, request, reply),
  };
}

/** A request no route serves: 405 with `Allow` when its path has routes for other methods, else 404. */
export function answerUnmatched(table: RouteTable, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = pathOf(request.url);
  const allowed = table.allowedMethods(path);
  if (allowed.length > 0 && !allowed.includes(request.method)) {
    const rendered = renderPathError(
      new GatewayError('method_not_allowed', `${request.method} is not allowed on ${path}: use ${allowed.join(', ')}.`),
      path,
      isGoogleClient(request),
      request.id,
    );
    return reply
      .code(rendered.status)
      .headers(rendered.headers)
      .header('allow', allowed.join(', '))
      .send(rendered.body);
  }
  const rendered = renderPathError(
    new GatewayError('not_found', `No route for ${request.method} ${path}.`),
    path,
    isGoogleClient(request),
    request.id,
  );
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

function writeRaw(response: ServerResponse, rendered: RenderedError, extra: Record<string, string>): void {
  const body = JSON.stringify(rendered.body);
  response.writeHead(rendered.status, {
    ...rendered.headers,
    ...extra,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}
