import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../canonical/errors.js';
import { formatUsd } from '../billing/money.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import { addSummaryRows } from '../storage/billing-ledger-repository.js';
import type { BillingRepository, UsageSummaryRow } from '../storage/billing-types.js';
import type { UsageRecord, UsageRepository } from '../storage/types.js';
import { pageLimit } from '../protocols/shared/query-params.js';
import { usageEvent } from '../telemetry/usage-export/usage-event.js';

const MS_PER_DAY = 86_400_000;
const DEFAULT_RANGE_DAYS = 30;

const TIME_HINT =
  'expected a date (2025-01-31, 00:00 UTC), a date-time with a zone (2025-01-31T12:00:00Z) or Unix seconds';

/**
 * A time bound as Unix ms, from a UTC date, an ISO 8601 date-time with an explicit zone (a zoneless time
 * would depend on the server's clock zone), or Unix seconds. Null when it is none of these.
 */
export function parseTimeBound(text: string): number | null {
  if (/^\d{1,11}$/.test(text)) return Number(text) * 1000;
  const match = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/.exec(text);
  if (match === null) return null;
  const ms = Date.parse(match[2] === undefined ? `${match[1]}T00:00:00Z` : text);
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2025-02-30 over to March; a calendar date that does not exist is a mistake, not a date.
  const [year, month, day] = match[1]!.split('-').map(Number) as [number, number, number];
  const check = new Date(Date.UTC(year, month - 1, day));
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  return ms;
}

/** A `from`/`to` query value: parsed by `parseTimeBound`, refused with the accepted forms named. */
export const timeBound = z.string().transform((text, context) => {
  const ms = parseTimeBound(text.trim());
  if (ms === null) {
    context.addIssue({ code: 'custom', message: TIME_HINT, input: text });
    return z.NEVER;
  }
  return ms;
});

const summaryQuery = z.object({
  /** Inclusive. */
  from: timeBound.optional(),
  /** Exclusive. */
  to: timeBound.optional(),
  group_by: z.enum(['day', 'model', 'key']).default('day'),
});

const requestsQuery = z.object({
  limit: pageLimit(100, 20),
  cursor: z.string().min(1).max(400).optional(),
});

interface Cursor {
  createdAt: number;
  requestId: string;
}

/** Opaque to clients: base64url of `createdAt:requestId` of the last record of the page. */
export function encodeUsageCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.createdAt}:${cursor.requestId}`, 'utf8').toString('base64url');
}

export function decodeUsageCursor(text: string): Cursor | null {
  const decoded = Buffer.from(text, 'base64url').toString('utf8');
  // Node decodes base64 leniently; only a cursor this API could have written round-trips exactly.
  if (Buffer.from(decoded, 'utf8').toString('base64url') !== text) return null;
  const match = /^(\d{1,15}):([\w.-]{1,200})$/.exec(decoded);
  if (match === null) return null;
  return { createdAt: Number(match[1]), requestId: match[2]! };
}

/** `GET /v1/usage` (totals per day, model or key) and `GET /v1/usage/requests` (recent records, paginated). */
export function registerUsageApi(
  app: FastifyInstance,
  storage: { billing: BillingRepository; usage: UsageRepository },
  now: () => number = Date.now,
): void {
  app.get('/v1/usage', { config: { scope: 'usage:read' } }, async (request) => {
    const parsed = summaryQuery.safeParse(request.query ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { group_by: groupBy } = parsed.data;
    const to = parsed.data.to ?? now();
    const from = parsed.data.from ?? to - DEFAULT_RANGE_DAYS * MS_PER_DAY;
    if (from >= to) throw invalidRequest("Invalid value for 'from': it must be earlier than 'to'.", 'from');
    const rows = await storage.billing.usageSummary(request.auth!.organisation.id, from, to, groupBy);
    const total = rows.reduce(addSummaryRows, emptyRow(''));
    const { group: _group, ...totals } = presentSummaryRow(total);
    return {
      object: 'list',
      group_by: groupBy,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      data: rows.map(presentSummaryRow),
      total: totals,
    };
  });

  app.get('/v1/usage/requests', { config: { scope: 'usage:read' } }, async (request) => {
    const parsed = requestsQuery.safeParse(request.query ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { limit, cursor: cursorText } = parsed.data;
    let cursor: Cursor | undefined;
    if (cursorText !== undefined) {
      const decoded = decodeUsageCursor(cursorText);
      if (decoded === null)
        throw invalidRequest(
          "Invalid value for 'cursor': pass the 'next_cursor' of a previous page unchanged.",
          'cursor',
        );
      cursor = decoded;
    }
    // One more than asked tells whether another page exists.
    const records = await storage.usage.listPage(request.auth!.organisation.id, limit + 1, cursor);
    const page = records.slice(0, limit);
    const hasMore = records.length > limit;
    const last = page[page.length - 1];
    return {
      object: 'list',
      data: page.map(presentUsageRecord),
      has_more: hasMore,
      next_cursor: hasMore && last !== undefined ? encodeUsageCursor(last) : null,
    };
  });
}

function emptyRow(group: string): UsageSummaryRow {
  return {
    group,
    requests: 0,
    inputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    costNano: 0n,
    unbilledTokens: 0,
    unbilledNano: 0n,
  };
}

function presentSummaryRow(row: UsageSummaryRow) {
  return {
    group: row.group,
    requests: row.requests,
    input_tokens: row.inputTokens,
    cache_read_tokens: row.cacheReadTokens,
    cache_write_tokens: row.cacheWriteTokens,
    // The part of the cache writes written for an hour (priced apart from 5-minute ones).
    cache_write_1h_tokens: row.cacheWrite1hTokens,
    output_tokens: row.outputTokens,
    reasoning_tokens: row.reasoningTokens,
    cost_usd: formatUsd(row.costNano),
    cost_nano_usd: row.costNano.toString(),
    // Reported tokens no free allowance, balance or key limit could pay, and their cost at list price.
    unbilled_tokens: row.unbilledTokens,
    unbilled_cost_usd: formatUsd(row.unbilledNano),
    unbilled_cost_nano_usd: row.unbilledNano.toString(),
  };
}

/**
 * A usage record as `GET /v1/usage` lists it: the usage export's event (one definition of a settled request's
 * fields, docs/usage-export.md#event-fields) without the fields only a delivery needs.
 */
function presentUsageRecord(record: UsageRecord) {
  const { object: _event, created_at_ms: _ms, organisation_id: _organisation, ...fields } = usageEvent(record);
  return { ...fields, object: 'usage_record' as const };
}
