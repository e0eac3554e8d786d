import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditLog } from '../accounts/audit/audit-log.js';
import { GatewayError } from '../canonical/errors.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import {
  allAuditEvents,
  auditCsv,
  auditFilter,
  auditJsonArray,
  auditPage,
  auditQuerySchema,
  exportFileName,
  presentAuditEvent,
} from './audit-reading.js';

/**
 * `GET /v1/audit` and `GET /v1/audit/export`: the audit log of the key's organisation, for a key with the
 * `audit:read` scope whose creator is, today, an owner or admin there (AuditLog.apiKeyMayRead).
 */
export function registerAuditApi(app: FastifyInstance, audit: AuditLog, now: () => number = Date.now): void {
  const readable = async (request: FastifyRequest) => {
    const { key, organisation } = request.auth!;
    if (!(await audit.apiKeyMayRead(key)))
      throw new GatewayError(
        'permission_denied',
        "This key may not read the audit log: it needs the 'audit:read' scope and a creator who is an owner or admin of the organisation.",
      );
    const parsed = auditQuerySchema.safeParse(request.query ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    return { input: parsed.data, filter: auditFilter(organisation.id, parsed.data) };
  };

  app.get('/v1/audit', { config: { scope: 'audit:read' } }, async (request) => {
    const { input, filter } = await readable(request);
    const { events, nextCursor } = await auditPage(audit, filter, input.limit);
    return { object: 'list', data: events.map(presentAuditEvent), next_cursor: nextCursor };
  });

  app.get('/v1/audit/export', { config: { scope: 'audit:read' } }, async (request, reply) => {
    const { input, filter } = await readable(request);
    const format = input.format ?? 'json';
    const events = allAuditEvents(audit, filter);
    return reply
      .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${exportFileName(format, now())}"`)
      .send(Readable.from(format === 'csv' ? auditCsv(events) : auditJsonArray(events)));
  });
}
