import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelCatalog } from '../catalog/model-catalog.js';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';

/** Paths that would only measure the scraper and the probes. */
const UNMEASURED = new Set(['/metrics', '/healthz', '/readyz']);

/** Whether requests to this route pattern are reported (the scraper and the probes are not). */
export function isMeasuredRoute(route: string): boolean {
  return !UNMEASURED.has(route);
}

/**
 * Reports every finished request (route pattern, model, status, duration) when its socket response closes, so
 * hijacked streams count with their full length and a client that hangs up counts too. Labels stay bounded:
 * unmatched paths are `unmatched`, models outside the catalog are `other`.
 *
 * Called with the route pattern the caller already knows (a per-route hook gets it at registration; a 404 is
 * `unmatched`): `request.routeOptions` builds a fresh object on every read, which a hook on every request
 * should not pay for.
 */
export function createRequestMeasurer(metrics: GatewayMetrics, catalog: ModelCatalog) {
  return function measureRequest(request: FastifyRequest, reply: FastifyReply, route: string): void {
    const started = performance.now();
    const raw = reply.raw;
    // `on`, not `once`: a response closes once, and `once` wraps the listener in one more closure.
    raw.on('close', () => {
      metrics.requestFinished(route, modelLabel(request, catalog), raw.statusCode, (performance.now() - started) / 1e3);
    });
  };
}

function modelLabel(request: FastifyRequest, catalog: ModelCatalog): string {
  // Google's routes name the model in the path (`/v1beta/models/{model}:generateContent`), the others in the body.
  const pathModel = (request.params as { model?: unknown } | undefined)?.model;
  const body = typeof pathModel === 'string' ? { model: pathModel.replace(/^models\//, '') } : request.body;
  if (body === null || typeof body !== 'object' || !('model' in body)) return 'none';
  const model = (body as { model: unknown }).model;
  return typeof model === 'string' && catalog.find(model) !== undefined ? model : 'other';
}
