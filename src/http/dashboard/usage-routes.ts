import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../../canonical/errors.js';
import { formatUsd } from '../../billing/money.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import type { ApiKeyRecord, UsageRecord, UsageRepository } from '../../storage/types.js';
import { pageLimit } from '../query-params.js';
import { decodeUsageCursor, encodeUsageCursor } from '../usage-api.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount } from './dashboard-session.js';
import { csvLine } from './csv.js';
import { groupSums, presentSums } from './usage-aggregation.js';
import { dayRange, dayText, utcDayNumber } from './utc-days.js';

/** `keyId`: one key's usage only (issue 24: usage filtered by key). */
const keyFilter = z.string().min(1).max(100).optional();
const rangeQuery = z.object({ days: z.enum(['7', '30', '90']).default('30').transform(Number), keyId: keyFilter });
const pageQuery = z.object({ limit: pageLimit(200, 50), cursor: z.string().min(1).max(400).optional(), keyId: keyFilter });

const EXPORT_BATCH = 500;
const CSV_HEADER = [
  'request_id', 'created_at', 'model', 'key_id', 'key_name', 'input_tokens', 'output_tokens', 'cache_read_tokens',
  'cache_write_tokens', 'reasoning_tokens', 'cost_usd', 'latency_ms', 'status', 'stream',
];

/** Usage charts (daily rollup), recent requests (paginated) and the CSV export. */
export function registerUsageRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/usage/daily', async (request) => {
    const account = currentAccount(request);
    const { days, keyId } = parseInput(rangeQuery, request.query);
    const today = utcDayNumber(deps.now());
    const from = dayText(today - (days - 1));
    const [allRows, keys] = await Promise.all([deps.usage.dailyTotals(account.id, from, dayText(today)), deps.keys.list(account.id)]);
    const rows = keyId === undefined ? allRows : allRows.filter((row) => row.apiKeyId === keyId);
    const byDay = new Map<string, typeof rows>();
    for (const row of rows) byDay.set(row.day, [...(byDay.get(row.day) ?? []), row]);
    const keysById = new Map(keys.map((key) => [key.id, key]));
    return {
      days: dayRange(today - (days - 1), today).map((day) => ({
        day,
        models: Object.fromEntries([...groupSums(byDay.get(day) ?? [], (row) => row.model)].map(([model, sums]) => [model, presentSums(sums)])),
      })),
      byModel: [...groupSums(rows, (row) => row.model)]
        .sort(([, a], [, b]) => compareCost(a.costNano, b.costNano))
        .map(([model, sums]) => ({ model, ...presentSums(sums) })),
      byKey: [...groupSums(rows, (row) => row.apiKeyId)]
        .sort(([, a], [, b]) => compareCost(a.costNano, b.costNano))
        .map(([keyId, sums]) => {
          const key = keysById.get(keyId);
          const { requests, inputTokens, outputTokens, costUsd } = presentSums(sums);
          return { keyId, keyName: key?.name ?? null, hint: key?.hint ?? null, requests, inputTokens, outputTokens, costUsd };
        }),
    };
  });

  api.get('/usage/requests', async (request) => {
    const account = currentAccount(request);
    const { limit, cursor: cursorText, keyId } = parseInput(pageQuery, request.query);
    const cursor = cursorText === undefined ? undefined : decodeUsageCursor(cursorText);
    if (cursor === null) throw invalidRequest("Invalid 'cursor': pass the 'nextCursor' of a previous page unchanged.", 'cursor');
    // One more than asked tells whether another page exists.
    const [records, keys] = await Promise.all([deps.usage.listPage(account.id, limit + 1, cursor, keyId), deps.keys.list(account.id)]);
    const page = records.slice(0, limit);
    const keyNames = new Map(keys.map((key) => [key.id, key.name]));
    const last = page[page.length - 1];
    return {
      requests: page.map((record) => presentUsageRecord(record, keyNames)),
      nextCursor: records.length > limit && last !== undefined ? encodeUsageCursor(last) : null,
    };
  });

  api.get('/usage/export.csv', async (request, reply) => {
    const account = currentAccount(request);
    const { days, keyId } = parseInput(rangeQuery, request.query);
    const now = deps.now();
    const from = (utcDayNumber(now) - (days - 1)) * MS_PER_DAY;
    const keys = await deps.keys.list(account.id);
    reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="tollgate-usage-${dayText(utcDayNumber(now))}-${days}d.csv"`);
    // Streamed page by page: 90 days of a busy account need not fit in memory.
    return reply.send(Readable.from(exportRows(deps.usage, account.id, from, keys, keyId)));
  });
}

async function* exportRows(usage: UsageRepository, accountId: string, from: number, keys: ApiKeyRecord[], keyId: string | undefined): AsyncGenerator<string> {
  const keyNames = new Map(keys.map((key) => [key.id, key.name]));
  yield csvLine(CSV_HEADER);
  let cursor: { createdAt: number; requestId: string } | undefined;
  for (;;) {
    const batch = await usage.listPage(accountId, EXPORT_BATCH, cursor, keyId);
    for (const record of batch) {
      if (record.createdAt < from) return;
      const row = presentUsageRecord(record, keyNames);
      yield csvLine([
        row.requestId, new Date(row.createdAt).toISOString(), row.model, row.keyId, row.keyName ?? '', row.inputTokens, row.outputTokens,
        row.cacheReadTokens, row.cacheWriteTokens, row.reasoningTokens, row.costUsd, row.latencyMs, row.status, row.stream,
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
    reasoningTokens: record.reasoningTokens,
    costUsd: formatUsd(record.costNano),
    latencyMs: record.latencyMs,
    status: record.status,
    stream: record.stream,
  };
}

/** Most expensive first. */
function compareCost(a: bigint, b: bigint): number {
  return a === b ? 0 : a > b ? -1 : 1;
}
