import { z } from 'zod';
import { actionsMatching } from '../accounts/audit/audit-actions.js';
import type { AuditLog } from '../accounts/audit/audit-log.js';
import { invalidRequest } from '../canonical/errors.js';
import { pageLimit } from '../protocols/shared/query-params.js';
import type { AuditEventRecord, AuditQuery } from '../storage/audit-types.js';
import { csvLine } from './dashboard/csv.js';

/**
 * Reading the audit log, shared by the dashboard (`/api/audit`) and the API (`/v1/audit`): the filters, keyset
 * pages, and the streamed CSV and JSON exports.
 */

const MS_PER_DAY = 86_400_000;
/** How many events one storage read of an export fetches: memory stays flat whatever the log's size. */
const EXPORT_PAGE = 500;

export const auditQuerySchema = z.object({
  from: z.string().max(40).optional(),
  to: z.string().max(40).optional(),
  actor: z.string().trim().min(1).max(254).optional(),
  action: z.string().trim().min(1).max(100).optional(),
  cursor: z.string().min(1).max(200).optional(),
  limit: pageLimit(200, 50),
  format: z.enum(['csv', 'json']).optional(),
});
export type AuditQueryInput = z.output<typeof auditQuerySchema>;

/** The storage query a request's filters name, without the page size and cursor. */
export function auditFilter(organisationId: string, input: AuditQueryInput): Omit<AuditQuery, 'limit'> {
  const query: Omit<AuditQuery, 'limit'> = { organisationId };
  if (input.from !== undefined) query.from = instant(input.from, 'from', 'start');
  if (input.to !== undefined) query.to = instant(input.to, 'to', 'end');
  if (query.from !== undefined && query.to !== undefined && query.from >= query.to)
    throw invalidRequest("'from' must be before 'to'.", 'from');
  if (input.actor !== undefined) query.actor = input.actor;
  if (input.action !== undefined) {
    const actions = actionsMatching(input.action);
    if (actions === null)
      throw invalidRequest(
        `'action' names no audited action: give one such as 'key.create', or an area such as 'key'.`,
        'action',
      );
    query.actions = actions;
  }
  if (input.cursor !== undefined) query.olderThan = decodeCursor(input.cursor);
  return query;
}

/** One page, newest first, and the cursor of the next (null on the last). */
export async function auditPage(
  audit: AuditLog,
  filter: Omit<AuditQuery, 'limit'>,
  limit: number,
): Promise<{ events: AuditEventRecord[]; nextCursor: string | null }> {
  const rows = await audit.list({ ...filter, limit: limit + 1 });
  const events = rows.slice(0, limit);
  const last = events[events.length - 1];
  return { events, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last) : null };
}

/** Every matching event, newest first, read in keyset pages. */
export async function* allAuditEvents(
  audit: AuditLog,
  filter: Omit<AuditQuery, 'limit'>,
): AsyncGenerator<AuditEventRecord> {
  let olderThan = filter.olderThan;
  for (;;) {
    const page = await audit.list({ ...filter, ...(olderThan === undefined ? {} : { olderThan }), limit: EXPORT_PAGE });
    yield* page;
    const last = page[page.length - 1];
    if (page.length < EXPORT_PAGE || last === undefined) return;
    olderThan = { createdAt: last.createdAt, id: last.id };
  }
}

/** An event as both APIs and both exports show it (snake_case, ISO time, before/after as parsed JSON). */
export function presentAuditEvent(event: AuditEventRecord) {
  return {
    id: event.id,
    organisation_id: event.organisationId,
    created_at: new Date(event.createdAt).toISOString(),
    actor: {
      type: event.actorType,
      id: event.actorId,
      email: event.actorEmail,
      key_id: event.actorKeyId,
    },
    ip: event.ip,
    action: event.action,
    target: event.targetType === null ? null : { type: event.targetType, id: event.targetId },
    before: parseJson(event.beforeJson),
    after: parseJson(event.afterJson),
  };
}

const CSV_HEADER = [
  'id',
  'created_at',
  'actor_type',
  'actor_id',
  'actor_email',
  'actor_key_id',
  'ip',
  'action',
  'target_type',
  'target_id',
  'before',
  'after',
];

/** The CSV export, line by line. */
export async function* auditCsv(events: AsyncIterable<AuditEventRecord>): AsyncGenerator<string> {
  yield csvLine(CSV_HEADER);
  for await (const event of events) {
    yield csvLine([
      event.id,
      new Date(event.createdAt).toISOString(),
      event.actorType,
      event.actorId ?? '',
      event.actorEmail ?? '',
      event.actorKeyId ?? '',
      event.ip ?? '',
      event.action,
      event.targetType ?? '',
      event.targetId ?? '',
      event.beforeJson ?? '',
      event.afterJson ?? '',
    ]);
  }
}

/** The JSON export: one array, written an event at a time. */
export async function* auditJsonArray(events: AsyncIterable<AuditEventRecord>): AsyncGenerator<string> {
  yield '[';
  let first = true;
  for await (const event of events) {
    yield `${first ? '' : ','}\n${JSON.stringify(presentAuditEvent(event))}`;
    first = false;
  }
  yield '\n]\n';
}

export function exportFileName(format: 'csv' | 'json', now: number): string {
  return `tollgate-audit-${new Date(now).toISOString().slice(0, 10)}.${format}`;
}

function parseJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/**
 * A bound of the range: an ISO date-time, or a date (`YYYY-MM-DD`, UTC) meaning the start of that day for `from`
 * and the end of it for `to`, so `from=to=2026-11-29` is that whole day.
 */
function instant(text: string, field: 'from' | 'to', side: 'start' | 'end'): number {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const parsed = Date.parse(day ? `${text}T00:00:00Z` : text);
  if (!Number.isFinite(parsed) || !/^\d{4}-\d{2}-\d{2}/.test(text))
    throw invalidRequest(`'${field}' must be a date (YYYY-MM-DD) or an ISO 8601 time.`, field);
  return day && side === 'end' ? parsed + MS_PER_DAY : parsed;
}

function encodeCursor(event: AuditEventRecord): string {
  return Buffer.from(`${event.createdAt}.${event.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,16})\.(aud_[0-9a-f]{32})$/.exec(text);
  if (match === null || Buffer.from(text, 'utf8').toString('base64url') !== cursor)
    throw invalidRequest("Invalid 'cursor': pass the 'nextCursor' of a previous page unchanged.", 'cursor');
  return { createdAt: Number(match[1]), id: match[2]! };
}
