import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelCatalog } from '../catalog/model-catalog.js';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';

/** Paths that would only measure the scraper and the probes. */
const UNMEASURED = new Set(['/metrics', '/healthz', '/readyz']);

/**
 * Reports every finished request (route pattern, model, status, duration) when its socket response closes, so
 * hijacked streams count with their full length and a client that hangs up counts too. Labels stay bounded:
 * unmatched paths are `unmatched`, models outside the catalog are `other`.
 */
export function createRequestMetricsHook(metrics: GatewayMetrics, catalog: ModelCatalog) {
  return async function measureRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const route = request.routeOptions.url;
    if (route !== undefined && UNMEASURED.has(route)) return;
    const started = process.hrtime.bigint();
    reply.raw.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.requestFinished(route ?? 'unmatched', modelLabel(request.body, catalog), reply.raw.statusCode, seconds);
    });
  };
}

function modelLabel(body: unknown, catalog: ModelCatalog): string {
  if (body === null || typeof body !== 'object' || !('model' in body)) return 'none';
  const model = (body as { model: unknown }).model;
  return typeof model === 'string' && catalog.find(model) !== undefined ? model : 'other';
}
