import type { ApiScope } from '../keys/key-permissions.js';
import type { AuthenticatedKey } from '../keys/key-service.js';

export type ClientProtocol = 'openai' | 'anthropic';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key authentication hook on every authenticated route. */
    auth: AuthenticatedKey | null;
  }
  interface FastifyContextConfig {
    /** Which client protocol's error shape this route answers in (default: openai). */
    protocol?: ClientProtocol;
    /** Routes that need no API key (health, dashboard assets). */
    public?: boolean;
    /** Model endpoints: counted against the key's requests-per-minute limit. */
    rateLimited?: boolean;
    /**
     * The key scope the route needs (one of a list, when a list), or `any` for routes every key may call.
     * Undeclared: `models:use` on model routes (`rateLimited`, or declaring a client `protocol`), every scope (a
     * standard key) on the others, so a new route is closed to restricted keys until it says otherwise.
     */
    scope?: ApiScope | readonly ApiScope[] | 'any';
  }
}
