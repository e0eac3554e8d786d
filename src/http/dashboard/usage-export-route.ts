import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../../canonical/errors.js';
import { EXPORT_CONTENT_TYPES, usageExportText } from '../usage-export-api.js';
import { timeBound } from '../usage-api.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';

const exportQuery = z.object({
  /** Inclusive: a date (00:00 UTC), a date-time with a zone or Unix seconds. */
  from: timeBound,
  /** Exclusive; default now. */
  to: timeBound.optional(),
  /** CSV, or JSON: one event per line (NDJSON), as `GET /v1/usage/export` writes them. */
  format: z.enum(['csv', 'json']).default('csv'),
  keyId: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  projectId: z.string().min(1).max(100).optional(),
});

/**
 * `GET /api/usage/export?from=&to=&format=csv|json[&keyId=][&model=][&projectId=]`: the session's organisation's usage
 * records of any range, oldest first, streamed in keyset pages like `GET /v1/usage/export` (the same columns and
 * events).
 */
export function registerUsageExportRoute(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/usage/export', { config: { permission: 'organisation:read' } }, async (request, reply) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const query = parseInput(exportQuery, request.query);
    const { from, format, keyId, model, projectId } = query;
    const to = query.to ?? deps.now();
    if (from >= to) throw invalidRequest("Invalid value for 'from': it must be earlier than 'to'.", 'from');
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const extension = format === 'csv' ? 'csv' : 'ndjson';
    // `to` is exclusive: a range ending at midnight is named by its last day.
    const lastDay = day(to - 1);
    reply
      .header('content-type', EXPORT_CONTENT_TYPES[format === 'csv' ? 'csv' : 'ndjson'])
      .header('content-disposition', `attachment; filename="tollgate-usage-${day(from)}-to-${lastDay}.${extension}"`)
      .header('cache-control', 'no-store');
    const pages = usageExportText(
      (after, limit) =>
        deps.usageExport.accountPage(organisationId, { from, to }, after, limit, { apiKeyId: keyId, model, projectId }),
      format === 'csv' ? 'csv' : 'ndjson',
    );
    return reply.send(Readable.from(pages, { highWaterMark: 1 }));
  });
}
