import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { pathOf as pathOfUrl } from './unmatched-requests.js';

/**
 * The dashboard single-page app (web/, built by Vite into dist/web) at `/`. Files of the build are served as
 * they are; any other GET path that looks like a page gets index.html, so client-side routes (/keys, /usage)
 * survive a reload. The API namespaces keep their JSON 404s: a typo in /v1 must never answer with HTML.
 */

/** Paths that belong to the APIs and probes, never to the SPA. */
const RESERVED_PREFIXES = ['/v1', '/v1beta', '/api', '/healthz', '/readyz', '/metrics'];

/** Vite puts content-hashed files here: they never change under the same name. */
const HASHED_ASSETS = 'assets/';

/**
 * Everything the page may load comes from this origin (the build ships fonts, scripts and styles; no CDN).
 * Inline style attributes stay allowed for the chart library's positioning.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface WebAppOptions {
  /** Directory of the built SPA (holds index.html); default: dist/web next to the compiled or source tree. */
  root?: string | undefined;
}

export function isReservedPath(path: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** dist/web whether this module runs compiled (dist/src/http) or from source under tsx/vitest (src/http). */
export function findBuiltWebApp(): string | undefined {
  // Compiled: dist/src/http → ../../../dist/web; source: src/http → ../../dist/web. Never web/ itself (the sources).
  const candidates = [new URL('../../../dist/web/', import.meta.url), new URL('../../dist/web/', import.meta.url)];
  for (const candidate of candidates) {
    const directory = fileURLToPath(candidate);
    if (existsSync(resolve(directory, 'index.html'))) return directory;
  }
  return undefined;
}

function setPageHeaders(reply: FastifyReply): void {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
}

function pathOf(request: FastifyRequest): string | null {
  try {
    return decodeURIComponent(pathOfUrl(request.url));
  } catch {
    return null;
  }
}

/**
 * The SPA's pages (web/src/App.tsx), with or without a trailing slash: index.html for any client. The Models page
 * (`/models`) is left out on purpose: a browser asks for HTML and gets it anyway, while an SDK pointed at the
 * gateway without `/v1` must still get the JSON 404 below.
 */
const PAGE_PATHS: ReadonlySet<string> = new Set([
  '',
  'keys',
  'projects',
  'playground',
  'usage',
  'billing',
  'limits',
  'members',
  'settings',
  'audit',
  'admin',
  'login',
  'register',
]);

/**
 * Whether the request is for a page: one of the SPA's pages, or any other path a browser navigates to (it asks for
 * HTML, `Accept: text/html…`, and the SPA shows its own not-found page). An API client with a wrong base URL
 * (`GET /models`) asks for JSON or for any type and gets the JSON 404 it can parse, never the dashboard's HTML.
 */
function wantsPage(request: FastifyRequest, relative: string): boolean {
  if (PAGE_PATHS.has(relative.replace(/\/+$/, ''))) return true;
  const accept = request.headers.accept;
  return accept === undefined || accept.includes('text/html');
}

/** A regular file of the build at `relative`, or null; never a path outside `root`. */
async function buildFile(root: string, relative: string): Promise<string | null> {
  if (relative === '' || relative.includes('\0')) return null;
  const absolute = resolve(root, relative);
  if (!absolute.startsWith(root.endsWith(sep) ? root : root + sep)) return null;
  try {
    return (await stat(absolute)).isFile() ? relative : null;
  } catch {
    return null;
  }
}

const NOT_BUILT_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tollgate</title></head>
<body><h1>Tollgate</h1><p>The dashboard was not built. Run <code>npm run build</code> and restart the gateway.
The API is available under <code>/v1</code>.</p></body></html>`;

/** Registers the SPA routes. Without a build (unit tests, a bare `tsc`), `/` explains that instead of crashing. */
export function registerWebApp(app: FastifyInstance, options: WebAppOptions = {}): void {
  const candidate = options.root ?? findBuiltWebApp();
  const root = candidate !== undefined && existsSync(resolve(candidate, 'index.html')) ? resolve(candidate) : undefined;
  // Encapsulated: the reply.sendFile decorator stays inside, and the app's JSON 404 handler is inherited.
  app.register(async (web) => {
    if (root === undefined) {
      web.get('/*', async (request, reply) => {
        const path = pathOf(request);
        if (path === null || isReservedPath(path) || !wantsPage(request, path.replace(/^\/+/, '')))
          return reply.callNotFound();
        setPageHeaders(reply);
        return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT_PAGE);
      });
      return;
    }
    // The build ships .br and .gz beside each text file (scripts/compress-web-assets.mjs): sent as the client
    // accepts them, with no CPU per request; a build without them is served uncompressed.
    await web.register(fastifyStatic, { root, serve: false, preCompressed: true });
    web.get('/*', async (request, reply) => {
      const path = pathOf(request);
      if (path === null || isReservedPath(path)) return reply.callNotFound();
      setPageHeaders(reply);
      const relative = path.replace(/^\/+/, '');
      // The precompressed copies are served in place of their file, never under their own names.
      const file = /\.(br|gz)$/.test(relative) ? null : await buildFile(root, relative);
      if (file !== null) {
        reply.header(
          'cache-control',
          file.startsWith(HASHED_ASSETS) ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
        );
        return reply.sendFile(file, { cacheControl: false });
      }
      // A missing asset (/assets/old-hash.js) is a real 404; a page path is a client-side route.
      const lastSegment = relative.split('/').pop() ?? '';
      if (lastSegment.includes('.') || !wantsPage(request, relative)) return reply.callNotFound();
      reply.header('cache-control', 'no-cache');
      return reply.sendFile('index.html', { cacheControl: false });
    });
  });
}
