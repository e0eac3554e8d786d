import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../canonical/errors.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import type { UsageRecord } from '../storage/types.js';
import type { ExportPosition, UsageExportRepository } from '../storage/usage-export-types.js';
import { USAGE_EVENT_COLUMNS, usageEvent, usageEventFields } from '../telemetry/usage-export/usage-event.js';
import { csvLine } from './dashboard/csv.js';
import { timeBound } from './usage-api.js';

const MS_PER_DAY = 86_400_000;
const DEFAULT_RANGE_DAYS = 30;
/** Records per keyset page: one query each, and at most one page of text waits in memory for a slow reader. */
const PAGE_SIZE = 1_000;
/** Records per piece of text handed to the socket (~30 kB of CSV). */
const CHUNK_RECORDS = 100;

const exportQuery = z.object({
  /** Inclusive. */
  from: timeBound.optional(),
  /** Exclusive. */
  to: timeBound.optional(),
  format: z.enum(['csv', 'ndjson']).default('csv'),
});

export type ExportFormat = 'csv' | 'ndjson';

/**
 * One account's usage records in [from, to), oldest first, as text in keyset pages: nothing holds more than a page,
 * whatever the range. Pulled by the response stream, so a slow reader pauses the queries instead of queueing rows.
 */
export async function* usageExportText(
  pageAfter: (after: ExportPosition | null, limit: number) => Promise<UsageRecord[]>,
  format: ExportFormat,
): AsyncGenerator<string> {
  if (format === 'csv') yield csvLine([...USAGE_EVENT_COLUMNS]);
  let after: ExportPosition | null = null;
  for (;;) {
    const records = await pageAfter(after, PAGE_SIZE);
    if (records.length === 0) return;
    // Written in small pieces: a piece this size dies young in V8's new space, where one string (and its Buffer) per
    // page would go to large-object space and wait there for a full collection.
    for (let start = 0; start < records.length; start += CHUNK_RECORDS) {
      let text = '';
      for (const record of records.slice(start, start + CHUNK_RECORDS)) {
        const event = usageEvent(record);
        text += format === 'csv' ? csvLine(usageEventFields(event)) : `${JSON.stringify(event)}\n`;
      }
      yield text;
    }
    if (records.length < PAGE_SIZE) return;
    const last = records[records.length - 1]!;
    after = { createdAt: last.createdAt, requestId: last.requestId };
  }
}

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

/** `GET /v1/usage/export?from&to&format=csv|ndjson`: the key's account's records in the range, streamed. */
export function registerUsageExportApi(
  app: FastifyInstance,
  usageExport: UsageExportRepository,
  now: () => number = Date.now,
): void {
  app.get('/v1/usage/export', { config: { scope: 'usage:read' } }, async (request, reply) => {
    const parsed = exportQuery.safeParse(request.query ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { format } = parsed.data;
    const to = parsed.data.to ?? now();
    const from = parsed.data.from ?? to - DEFAULT_RANGE_DAYS * MS_PER_DAY;
    if (from >= to) throw invalidRequest("Invalid value for 'from': it must be earlier than 'to'.", 'from');
    const accountId = request.auth!.organisation.id;
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    reply
      .header('content-type', EXPORT_CONTENT_TYPES[format])
      .header('content-disposition', `attachment; filename="tollgate-usage-${day(from)}-${day(to)}.${format}"`)
      .header('cache-control', 'no-store');
    const pages = usageExportText(
      (after, limit) => usageExport.accountPage(accountId, { from, to }, after, limit),
      format,
    );
    // One piece of text at a time ahead of the socket (fastify pipes the stream with backpressure).
    return reply.send(Readable.from(pages, { highWaterMark: 1 }));
  });
}
