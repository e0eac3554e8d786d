import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { hasScope, missingScope } from '../keys/key-permissions.js';
import { API_SCOPES, type ApiScope } from '../storage/key-permission-types.js';
import type { AuthenticatedKey, KeyService } from '../keys/key-service.js';
import type { RateLimitEnforcer } from './rate-limit-hook.js';
import { isGoogleClient } from './request-context.js';
import { appendOnRequestHook } from './route-hooks.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The presented key: `Authorization: Bearer <key>` (OpenAI SDKs, @anthropic-ai/sdk 1.x) or `x-api-key`
 * (older Anthropic clients). Both are accepted on every endpoint.
 */
export function presentedApiKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = BEARER.exec(authorization);
    if (match !== null) return match[1];
  }
  const header = request.headers['x-api-key'];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined ? undefined : value.trim();
}

/**
 * The key on Google's routes: `x-goog-api-key` (@google/genai, Gemini CLI), else `Authorization: Bearer` or
 * `x-api-key`, else the `?key=` query parameter (curl examples). An empty `x-goog-api-key` (Gemini CLI in gateway
 * mode without a key) counts as absent. The query string is never logged (the request log writes the path only).
 */
export function presentedGoogleApiKey(request: FastifyRequest): string | undefined {
  const header = request.headers['x-goog-api-key'];
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value !== undefined && value !== '') return value;
  const other = presentedApiKey(request);
  if (other !== undefined && other !== '') return other;
  const query = request.query as Record<string, unknown> | undefined;
  const key = query?.key;
  return typeof key === 'string' && key !== '' ? key : undefined;
}

/**
 * For every API route of `api` registered after this call, except `config.public` ones: one `onRequest` hook
 * that authenticates (leaving the key and account on the request) and, on `config.rateLimited` routes, then
 * enforces the key's rate limit. One hook instead of two, with the route's config read once at registration.
 */
export function registerApiKeyGuard(api: FastifyInstance, keys: KeyService, enforceRateLimit: RateLimitEnforcer): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const config = route.config ?? {};
    if (config.public === true) return;
    const presented =
      config.protocol === 'google'
        ? presentedGoogleApiKey
        : config.googleClients === true
          ? (request: FastifyRequest) =>
              isGoogleClient(request) ? presentedGoogleApiKey(request) : presentedApiKey(request)
          : presentedApiKey;
    // A route of a client protocol (it names the protocol its errors are shaped in) is a model route, like a
    // rate-limited one: count_tokens, stored responses, a protocol's model list, whoever adds them.
    const checkScope = scopeCheck(
      routeScopes(config.scope, config.rateLimited === true || config.protocol !== undefined),
    );
    if (config.rateLimited !== true) {
      appendOnRequestHook(route, async function authenticateApiKey(request: FastifyRequest): Promise<void> {
        const auth = await keys.authenticate(presented(request));
        checkScope(auth);
        request.auth = auth;
      });
      return;
    }
    const anthropic = config.protocol === 'anthropic';
    appendOnRequestHook(route, async function authenticateAndLimit(request, reply): Promise<void> {
      const auth = await keys.authenticate(presented(request));
      // Before the rate limit: a request the key may not make is not counted against it.
      checkScope(auth);
      request.auth = auth;
      await enforceRateLimit(auth, reply, anthropic);
    });
  });
}

/**
 * The scopes a route accepts (any one of them will do), or null for every key. A route that declares nothing
 * needs `models:use` when it is a model route (rate-limited, or of a client protocol), and every scope otherwise
 * (closed to restricted keys by default).
 */
export function routeScopes(
  declared: ApiScope | readonly ApiScope[] | 'any' | undefined,
  modelRoute: boolean,
): readonly ApiScope[] | null {
  if (declared === 'any') return null;
  if (declared === undefined) return modelRoute ? ['models:use'] : API_SCOPES;
  return typeof declared === 'string' ? [declared] : declared;
}

/** Throws the 403 `permission_denied` naming the scope when the key has none of `accepted` (all of API_SCOPES: all needed). */
function scopeCheck(accepted: readonly ApiScope[] | null): (auth: AuthenticatedKey) => void {
  if (accepted === null) return () => {};
  const needsAll = accepted === API_SCOPES;
  return function checkScope(auth: AuthenticatedKey): void {
    const permissions = auth.key.permissions;
    if (permissions.scopes === null) return;
    if (needsAll) {
      const missing = accepted.filter((scope) => !hasScope(permissions, scope));
      if (missing.length > 0) throw missingScope(missing, true);
      return;
    }
    if (!accepted.some((scope) => hasScope(permissions, scope))) throw missingScope(accepted, false);
  };
}
