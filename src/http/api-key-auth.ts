import type { FastifyRequest } from 'fastify';
import type { KeyService } from '../keys/key-service.js';

/**
 * The presented key: `Authorization: Bearer <key>` (OpenAI SDKs, @anthropic-ai/sdk 1.x) or `x-api-key`
 * (older Anthropic clients). Both are accepted on every endpoint.
 */
export function presentedApiKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match !== null) return match[1];
  }
  const header = request.headers['x-api-key'];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined ? undefined : value.trim();
}

/** Hook for every API route: authenticates and leaves the key and account on the request. */
export function createApiKeyAuthHook(keys: KeyService) {
  return async function authenticateApiKey(request: FastifyRequest): Promise<void> {
    if (request.routeOptions.config.public === true) return;
    request.auth = await keys.authenticate(presentedApiKey(request));
  };
}
