import type { FastifyRequest } from 'fastify';
import type { ApiScope } from '../storage/key-permission-types.js';
import type { AuthenticatedKey } from '../keys/key-service.js';

/**
 * Whose error body a client expects (OpenAI's, Anthropic's or Google's), not the API it called; OpenAI's Responses
 * API has the same shape with its own wording where clients act on it (a prompt over the window).
 */
export type ErrorShape = 'openai' | 'openai-responses' | 'anthropic' | 'google';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key authentication hook on every authenticated route. */
    auth: AuthenticatedKey | null;
  }
  interface FastifyContextConfig {
    /** Which client protocol's error shape this route answers in (default: openai). */
    protocol?: ErrorShape;
    /** Routes that need no API key (health, dashboard assets). */
    public?: boolean;
    /** Model endpoints: counted against the key's requests-per-minute limit. */
    rateLimited?: boolean;
    /**
     * Google clients call this path too (@google/genai lists and gets models under `/v1/models`): for a request
     * from one, the key is read the Google way and errors answer in Google's shape.
     */
    googleClients?: boolean;
    /**
     * The key scope the route needs (one of a list, when a list), or `any` for routes every key may call.
     * Undeclared: `models:use` on model routes (`rateLimited`, or declaring a client `protocol`), every scope (a
     * standard key) on the others, so a new route is closed to restricted keys until it says otherwise.
     */
    scope?: ApiScope | readonly ApiScope[] | 'any';
  }
}

/** A request from a Google SDK: it names itself in `x-goog-api-client`, or sends its key in `x-goog-api-key`. */
export function isGoogleClient(request: FastifyRequest): boolean {
  return request.headers['x-goog-api-client'] !== undefined || request.headers['x-goog-api-key'] !== undefined;
}

/** The error shape a request is answered in: its route's protocol, Google's for a Google client where it may call. */
export function requestProtocol(request: FastifyRequest): ErrorShape {
  const config = request.routeOptions.config;
  if (config?.googleClients === true && isGoogleClient(request)) return 'google';
  return config?.protocol ?? 'openai';
}
