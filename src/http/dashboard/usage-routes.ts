import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../../canonical/errors.js';
import { formatUsd } from '../../billing/money.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import type { ApiKeyRecord, UsageRecord, UsageRepository } from '../../storage/types.js';
import { pageLimit } from '../../protocols/shared/query-params.js';
import { decodeUsageCursor, encodeUsageCursor } from '../usage-api.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound } from './dashboard-error.js';
import { currentOrganisation } from './dashboard-session.js';
import { csvLine } from './csv.js';
import { groupSums, presentSums } from './usage-aggregation.js';
import { resolveUsageRange, usageRangeFields } from './usage-range.js';
import { dayRange, dayText, utcDayNumber } from './utc-days.js';

/**
 * `keyId`, `model` and `projectId`: one key's, one model's or one project's usage only (the dashboard's filters). A
 * project's usage is that of its keys: usage rows name the key, and a key never leaves its project, so joining through
 * the key is exact without a project column on the usage tables (which the settlement hot path would have to write).
 */
const filterFields = {
  keyId: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  projectId: z.string().min(1).max(200).optional(),
};
const rangeQuery = z.object({ ...usageRangeFields, ...filterFields });
const pageQuery = z.object({
  limit: pageLimit(200, 50),
  cursor: z.string().min(1).max(400).optional(),
  ...filterFields,
});

/** Every member sees the organisation's usage. */
const READ = { config: { permission: 'organisation:read' } } as const;

const EXPORT_BATCH = 500;
const CSV_HEADER = [
  'request_id',
  'created_at',
  'model',
  'key_id',
  'key_name',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_usd',
  'latency_ms',
  'status',
  'stream',
  // Last, so the columns before it keep their places for existing readers.
  'cache_write_1h_tokens',
];

/** Usage charts (daily rollup), recent requests (paginated) and the CSV export. */
export function registerUsageRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/usage/daily', READ, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { keyId, model, projectId, ...range } = parseInput(rangeQuery, request.query);
    const { firstDay, lastDay } = resolveUsageRange(range, deps.now());
    const [allRows, keys, projects] = await Promise.all([
      deps.usage.dailyTotals(organisationId, dayText(firstDay), dayText(lastDay)),
      deps.keys.list(organisationId),
      deps.projects.list(organisationId, true),
    ]);
    const projectOfKey = new Map(keys.map((key) => [key.id, key.projectId]));
    const projectNames = new Map(projects.map((project) => [project.id, project.name]));
    // Filters by key, by model and by project; what can be chosen comes from the whole range.
    const rows = allRows.filter(
      (row) =>
        (keyId === undefined || row.apiKeyId === keyId) &&
        (model === undefined || row.model === model) &&
        (projectId === undefined || projectOfKey.get(row.apiKeyId) === projectId),
    );
    const byDay = new Map<string, typeof rows>();
    for (const row of rows) byDay.set(row.day, [...(byDay.get(row.day) ?? []), row]);
    const keysById = new Map(keys.map((key) => [key.id, key]));
    return {
      days: dayRange(firstDay, lastDay).map((day) => ({
        day,
        models: Object.fromEntries(
          [...groupSums(byDay.get(day) ?? [], (row) => row.model)].map(([model, sums]) => [model, presentSums(sums)]),
        ),
      })),
      byModel: [...groupSums(rows, (row) => row.model)]
        .sort(([, a], [, b]) => compareCost(a.costNano, b.costNano))
        .map(([model, sums]) => ({ model, ...presentSums(sums) })),
      byKey: [...groupSums(rows, (row) => row.apiKeyId)]
        .sort(([, a], [, b]) => compareCost(a.costNano, b.costNano))
        .map(([rowKeyId, sums]) => {
          const key = keysById.get(rowKeyId);
          const { requests, inputTokens, outputTokens, costUsd, unbilledTokens, unbilledUsd } = presentSums(sums);
          return {
            keyId: rowKeyId,
            keyName: key?.name ?? null,
            hint: key?.hint ?? null,
            requests,
            inputTokens,
            outputTokens,
            costUsd,
            unbilledTokens,
            unbilledUsd,
          };
        }),
      byProject: [...groupSums(rows, (row) => projectOfKey.get(row.apiKeyId) ?? '')]
        .sort(([, a], [, b]) => compareCost(a.costNano, b.costNano))
        .map(([rowProjectId, sums]) => {
          const { requests, inputTokens, outputTokens, costUsd, unbilledTokens, unbilledUsd } = presentSums(sums);
          return {
            projectId: rowProjectId,
            projectName: projectNames.get(rowProjectId) ?? null,
            requests,
            inputTokens,
            outputTokens,
            costUsd,
            unbilledTokens,
            unbilledUsd,
          };
        }),
      filters: {
        models: [...new Set(allRows.map((row) => row.model))].sort(),
        // Every project of the organisation, live or archived, so a project with no usage yet can be chosen too.
        projects: projects.map((project) => ({
          projectId: project.id,
          projectName: project.name,
          archived: project.archivedAt !== null,
        })),
        keys: [...new Set(allRows.map((row) => row.apiKeyId))].map((id) => ({
          keyId: id,
          keyName: keysById.get(id)?.name ?? null,
          hint: keysById.get(id)?.hint ?? null,
        })),
      },
    };
  });

  api.get('/usage/requests', READ, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { limit, cursor: cursorText, keyId, model, projectId } = parseInput(pageQuery, request.query);
    const cursor = cursorText === undefined ? undefined : decodeUsageCursor(cursorText);
    if (cursor === null)
      throw invalidRequest("Invalid 'cursor': pass the 'nextCursor' of a previous page unchanged.", 'cursor');
    // One more than asked tells whether another page exists.
    const [records, keys] = await Promise.all([
      deps.usage.listPage(organisationId, limit + 1, cursor, { apiKeyId: keyId, model, projectId }),
      deps.keys.list(organisationId),
    ]);
    const page = records.slice(0, limit);
    const keyNames = new Map(keys.map((key) => [key.id, key.name]));
    const last = page[page.length - 1];
    return {
      requests: page.map((record) => presentUsageRecord(record, keyNames)),
      nextCursor: records.length > limit && last !== undefined ? encodeUsageCursor(last) : null,
    };
  });

  // One request, for the ledger's link to what a charge paid for.
  api.get<{ Params: { id: string } }>('/usage/requests/:id', READ, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const [records, keys] = await Promise.all([
      deps.usage.findByRequestIds(organisationId, [request.params.id]),
      deps.keys.list(organisationId),
    ]);
    const record = records[0];
    if (record === undefined)
      throw notFound(
        'No such request in this organisation (requests older than the retention period are summarised by day only).',
      );
    return { request: presentUsageRecord(record, new Map(keys.map((key) => [key.id, key.name]))) };
  });

  api.get('/usage/export.csv', READ, async (request, reply) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { keyId, model, projectId, ...query } = parseInput(rangeQuery, request.query);
    const now = deps.now();
    const range = resolveUsageRange(query, now);
    const from = range.firstDay * MS_PER_DAY;
    const to = (range.lastDay + 1) * MS_PER_DAY;
    const keys = await deps.keys.list(organisationId);
    reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header(
        'content-disposition',
        `attachment; filename="tollgate-usage-${dayText(utcDayNumber(now))}-${range.label}.csv"`,
      );
    // Streamed page by page: 90 days of a busy account need not fit in memory. Newest first, from the range's end.
    const start = { createdAt: to, requestId: '' };
    return reply.send(
      Readable.from(exportRows(deps.usage, organisationId, from, start, keys, { apiKeyId: keyId, model, projectId })),
    );
  });
}

async function* exportRows(
  usage: UsageRepository,
  accountId: string,
  from: number,
  start: { createdAt: number; requestId: string },
  keys: ApiKeyRecord[],
  filter: { apiKeyId: string | undefined; model: string | undefined; projectId: string | undefined },
): AsyncGenerator<string> {
  const keyNames = new Map(keys.map((key) => [key.id, key.name]));
  yield csvLine(CSV_HEADER);
  let cursor: { createdAt: number; requestId: string } = start;
  for (;;) {
    const batch = await usage.listPage(accountId, EXPORT_BATCH, cursor, filter);
    for (const record of batch) {
      if (record.createdAt < from) return;
      const row = presentUsageRecord(record, keyNames);
      yield csvLine([
        row.requestId,
        new Date(row.createdAt).toISOString(),
        row.model,
        row.keyId,
        row.keyName ?? '',
        row.inputTokens,
        row.outputTokens,
        row.cacheReadTokens,
        row.cacheWriteTokens,
        row.reasoningTokens,
        row.costUsd,
        row.latencyMs,
        row.status,
        row.stream,
        row.cacheWrite1hTokens,
      ]);
    }
    const last = batch[batch.length - 1];
    if (batch.length < EXPORT_BATCH || last === undefined) return;
    cursor = { createdAt: last.createdAt, requestId: last.requestId };
  }
}

function presentUsageRecord(record: UsageRecord, keyNames: ReadonlyMap<string, string>) {
  return {
    requestId: record.requestId,
    createdAt: record.createdAt,
    model: record.model,
    keyId: record.apiKeyId,
    keyName: keyNames.get(record.apiKeyId) ?? null,
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    cacheReadTokens: record.cacheReadTokens,
    cacheWriteTokens: record.cacheWriteTokens,
    cacheWrite1hTokens: record.cacheWrite1hTokens,
    reasoningTokens: record.reasoningTokens,
    costUsd: formatUsd(record.costNano),
    // Reported tokens no free allowance, balance or key limit could pay (docs/billing.md#splitting-reported-usage).
    unbilledTokens: record.unbilledTokens ?? 0,
    unbilledUsd: formatUsd(record.unbilledNano),
    latencyMs: record.latencyMs,
    status: record.status,
    stream: record.stream,
  };
}

/** Most expensive first. */
function compareCost(a: bigint, b: bigint): number {
  return a === b ? 0 : a > b ? -1 : 1;
}
