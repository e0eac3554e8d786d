import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { KeyService } from '../keys/key-service.js';
import type { RateLimitEnforcer } from './rate-limit-hook.js';
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
 * For every API route of `api` registered after this call, except `config.public` ones: one `onRequest` hook
 * that authenticates (leaving the key and account on the request) and, on `config.rateLimited` routes, then
 * enforces the key's rate limit. One hook instead of two, with the route's config read once at registration.
 */
export function registerApiKeyGuard(api: FastifyInstance, keys: KeyService, enforceRateLimit: RateLimitEnforcer): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const config = route.config ?? {};
    if (config.public === true) return;
    if (config.rateLimited !== true) {
      appendOnRequestHook(route, async function authenticateApiKey(request: FastifyRequest): Promise<void> {
        request.auth = await keys.authenticate(presentedApiKey(request));
      });
      return;
    }
    const anthropic = config.protocol === 'anthropic';
    appendOnRequestHook(route, async function authenticateAndLimit(request, reply): Promise<void> {
      const auth = await keys.authenticate(presentedApiKey(request));
      request.auth = auth;
      await enforceRateLimit(auth, reply, anthropic);
    });
  });
}
