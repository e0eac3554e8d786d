import type { FastifyInstance } from 'fastify';

/** Liveness: the process answers. Readiness checks come with the operations work. */
export function registerHealth(app: FastifyInstance): void {
  app.get('/healthz', { config: { public: true } }, async () => ({ status: 'ok' }));
}
