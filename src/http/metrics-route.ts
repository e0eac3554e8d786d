import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { sendError } from './render-error.js';

export interface MetricsSource {
  contentType: string;
  render(): Promise<string>;
}

/**
 * `GET /metrics` in the Prometheus text format. With a token configured (METRICS_TOKEN), scrapers must send
 * `Authorization: Bearer <token>`; compared through hashes in constant time.
 */
export function registerMetricsRoute(app: FastifyInstance, source: MetricsSource, token: string | undefined): void {
  const expected = token === undefined ? undefined : digest(token);
  app.get('/metrics', { config: { public: true } }, async (request, reply) => {
    if (expected !== undefined) {
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
      if (!timingSafeEqual(digest(given), expected)) {
        return sendError(
          reply.header('www-authenticate', 'Bearer'),
          new GatewayError('invalid_api_key', 'A valid metrics token is required.'),
          'openai',
        );
      }
    }
    return reply.type(source.contentType).send(await source.render());
  });
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
