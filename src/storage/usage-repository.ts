import { sql, type Kysely, type Selectable } from 'kysely';
import { fromIntegerBoolean, toIntegerBoolean, type Database, type UsageRecordsTable } from './database-schema.js';
import { fromMoneyColumn, money, toMoneyParameter } from './money-sql.js';
import type {
  AccountUsageTotals,
  CalibrationSample,
  DailyUsageRow,
  ReconcileRecord,
  UsageRecord,
  UsageRepository,
} from './types.js';

export const MS_PER_DAY = 86_400_000;

/** The UTC day number (the rollup's `day` column) of an epoch-ms time. */
export function utcDayNumber(at: number): number {
  return Math.floor(at / MS_PER_DAY);
}

/** `YYYY-MM-DD` (UTC) → day number; a RangeError for anything else, so a bad range never reaches SQL. */
export function dayNumberFromIso(day: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  const at = match === null ? Number.NaN : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  if (Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== day)
    throw new RangeError(`Not a YYYY-MM-DD day: ${JSON.stringify(day)}.`);
  return at / MS_PER_DAY;
}

export function isoFromDayNumber(day: number): string {
  return new Date(day * MS_PER_DAY).toISOString().slice(0, 10);
}

/** A BIGINT sum as text (PostgreSQL's sum(bigint) is numeric, which pg hands back as a string anyway). */
function sumText(column: string) {
  return sql<string>`cast(sum(${sql.ref(column)}) as text)`;
}

/** Every usage column, money through its text cast. */
export function selectUsageColumns(db: Kysely<Database>) {
  return db
    .selectFrom('usage_records')
    .select([
      'request_id',
      'account_id',
      'api_key_id',
      'model',
      'family',
      'input_tokens',
      'cache_read_tokens',
      'cache_write_tokens',
      'cache_write_1h_tokens',
      'output_tokens',
      'reasoning_tokens',
      'web_search_requests',
      'web_fetch_requests',
      'status',
      'stream',
      'latency_ms',
      'created_at',
      'raw_usage',
      'free_tokens',
      'route',
      'unbilled_tokens',
      'local_input_tokens',
    ])
    .select([
      money('cost_nano').as('cost_nano'),
      money('unbilled_nano').as('unbilled_nano'),
      money('server_tool_nano').as('server_tool_nano'),
    ]);
}

/** Usage rows are written only by settlement (each database's billing store), together with the money they cost. */
/** The organisation's keys in a project: a project's usage is its keys' (a key never leaves its project). */
export function projectKeyIds(db: Kysely<Database>, organisationId: string, projectId: string) {
  return db
    .selectFrom('api_keys')
    .select('api_keys.id')
    .where('api_keys.account_id', '=', organisationId)
    .where('api_keys.project_id', '=', projectId);
}

export function createUsageRepository(db: Kysely<Database>): UsageRepository {
  return {
    async listByAccount(accountId: string, limit: number): Promise<UsageRecord[]> {
      return this.listPage(accountId, limit);
    },

    async listPage(accountId, limit, cursor, filter): Promise<UsageRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      let query = selectUsageColumns(db).where('account_id', '=', accountId);
      // The dashboard's key and model filters (the account's rows are few per page; the index range is the account's).
      if (filter?.apiKeyId !== undefined) query = query.where('api_key_id', '=', filter.apiKeyId);
      if (filter?.model !== undefined) query = query.where('model', '=', filter.model);
      if (filter?.projectId !== undefined)
        query = query.where('api_key_id', 'in', projectKeyIds(db, accountId, filter.projectId));
      if (cursor !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('created_at', '<', cursor.createdAt),
            eb.and([eb('created_at', '=', cursor.createdAt), eb('request_id', '<', cursor.requestId)]),
          ]),
        );
      }
      // Served by the (account_id, created_at) index; request_id makes ties deterministic.
      const rows = await query.orderBy('created_at', 'desc').orderBy('request_id', 'desc').limit(limit).execute();
      return rows.map(toUsageRecord);
    },

    async dailyTotals(accountId, fromDay, toDay): Promise<DailyUsageRow[]> {
      const rows = await db
        .selectFrom('usage_daily')
        .select([
          'day',
          'model',
          'api_key_id',
          'requests',
          'input_tokens',
          'output_tokens',
          'cache_read_tokens',
          'cache_write_tokens',
          'cache_write_1h_tokens',
          'reasoning_tokens',
          'unbilled_tokens',
        ])
        .select([money('cost_nano').as('cost'), money('unbilled_nano').as('unbilled')])
        .where('account_id', '=', accountId)
        .where('day', '>=', dayNumberFromIso(fromDay))
        .where('day', '<=', dayNumberFromIso(toDay))
        .orderBy('day')
        .orderBy('model')
        .orderBy('api_key_id')
        .execute();
      return rows.map((row) => ({
        day: isoFromDayNumber(Number(row.day)),
        model: row.model,
        apiKeyId: row.api_key_id,
        requests: Number(row.requests),
        inputTokens: Number(row.input_tokens),
        outputTokens: Number(row.output_tokens),
        cacheReadTokens: Number(row.cache_read_tokens),
        cacheWriteTokens: Number(row.cache_write_tokens),
        cacheWrite1hTokens: Number(row.cache_write_1h_tokens),
        reasoningTokens: Number(row.reasoning_tokens),
        costNano: fromMoneyColumn(row.cost),
        unbilledTokens: Number(row.unbilled_tokens),
        unbilledNano: fromMoneyColumn(row.unbilled),
      }));
    },

    async totalsByAccount(fromDay, toDay): Promise<AccountUsageTotals[]> {
      const rows = await db
        .selectFrom('usage_daily')
        .select('account_id')
        .select([
          sumText('requests').as('requests'),
          // Reasoning tokens are part of output tokens, so they are not added again.
          sql<string>`cast(sum(input_tokens + cache_read_tokens + cache_write_tokens + output_tokens) as text)`.as(
            'tokens',
          ),
          sumText('cost_nano').as('cost'),
        ])
        .where('day', '>=', dayNumberFromIso(fromDay))
        .where('day', '<=', dayNumberFromIso(toDay))
        .groupBy('account_id')
        .orderBy('account_id')
        .execute();
      return rows.map((row) => ({
        accountId: row.account_id,
        requests: Number(row.requests),
        tokens: Number(row.tokens),
        costNano: fromMoneyColumn(row.cost),
      }));
    },

    async recordedRequestIds(requestIds): Promise<Set<string>> {
      const found = new Set<string>();
      // In slices: a parameter per id, and PostgreSQL takes at most 65,535 parameters a statement.
      for (let start = 0; start < requestIds.length; start += 500) {
        const slice = requestIds.slice(start, start + 500);
        const rows = await db
          .selectFrom('usage_records')
          .select('request_id')
          .where('request_id', 'in', slice)
          .execute();
        for (const row of rows) found.add(row.request_id);
      }
      return found;
    },

    async findByRequestIds(accountId, requestIds): Promise<UsageRecord[]> {
      const records: UsageRecord[] = [];
      for (let start = 0; start < requestIds.length; start += 500) {
        const slice = requestIds.slice(start, start + 500);
        const rows = await db
          .selectFrom('usage_records')
          .selectAll()
          .where('account_id', '=', accountId)
          .where('request_id', 'in', slice)
          .execute();
        records.push(...rows.map(toUsageRecord));
      }
      return records;
    },

    async calibrationSamples(scan): Promise<CalibrationSample[]> {
      if (!Number.isSafeInteger(scan) || scan <= 0) return [];
      const rows = await db
        .selectFrom((eb) =>
          eb
            .selectFrom('usage_records')
            .select([
              'model',
              'family',
              'created_at',
              'request_id',
              'local_input_tokens',
              'input_tokens',
              'cache_read_tokens',
              'cache_write_tokens',
            ])
            .orderBy('created_at', 'desc')
            .orderBy('request_id', 'desc')
            .limit(scan)
            .as('recent'),
        )
        .selectAll()
        .where('local_input_tokens', 'is not', null)
        .orderBy('created_at')
        .orderBy('request_id')
        .execute();
      return rows.map((row) => ({
        model: row.model,
        family: row.family,
        localInputTokens: Number(row.local_input_tokens),
        vendorInputTokens: Number(row.input_tokens) + Number(row.cache_read_tokens) + Number(row.cache_write_tokens),
      }));
    },

    async reconcilePage(fromMs, toMs, limit, cursor): Promise<ReconcileRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      // Through the created_at index, keyset-paged so that a long range never holds one huge result in memory.
      let query = db
        .selectFrom('usage_records')
        .select([
          'request_id',
          'account_id',
          'model',
          'created_at',
          'input_tokens',
          'cache_read_tokens',
          'cache_write_tokens',
          'cache_write_1h_tokens',
          'output_tokens',
          'free_tokens',
          'unbilled_tokens',
        ])
        .select([
          money('cost_nano').as('cost'),
          money('unbilled_nano').as('unbilled'),
          money('server_tool_nano').as('server_tool'),
        ])
        .where('created_at', '>=', fromMs)
        .where('created_at', '<', toMs);
      if (cursor !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('created_at', '>', cursor.createdAt),
            eb.and([eb('created_at', '=', cursor.createdAt), eb('request_id', '>', cursor.requestId)]),
          ]),
        );
      }
      const rows = await query.orderBy('created_at').orderBy('request_id').limit(limit).execute();
      if (rows.length === 0) return [];
      // The page's ledger lines by their unique idempotency key (`usage:<request id>`), in slices of parameters.
      const lines = new Map<string, NonNullable<ReconcileRecord['ledger']>>();
      for (let start = 0; start < rows.length; start += 500) {
        const keys = rows.slice(start, start + 500).map((row) => `usage:${row.request_id}`);
        const found = await db
          .selectFrom('ledger_entries')
          .select(['request_id', 'unbilled_tokens'])
          .select([money('amount_nano').as('amount'), money('unbilled_nano').as('unbilled')])
          .where('idempotency_key', 'in', keys)
          .where('kind', '=', 'usage')
          .execute();
        for (const line of found) {
          if (line.request_id === null) continue;
          lines.set(line.request_id, {
            amountNano: fromMoneyColumn(line.amount),
            unbilledTokens: Number(line.unbilled_tokens),
            unbilledNano: fromMoneyColumn(line.unbilled),
          });
        }
      }
      return rows.map((row) => ({
        requestId: row.request_id,
        accountId: row.account_id,
        model: row.model,
        createdAt: Number(row.created_at),
        inputTokens: Number(row.input_tokens),
        cacheReadTokens: Number(row.cache_read_tokens),
        cacheWriteTokens: Number(row.cache_write_tokens),
        cacheWrite1hTokens: Number(row.cache_write_1h_tokens),
        outputTokens: Number(row.output_tokens),
        freeTokens: Number(row.free_tokens),
        unbilledTokens: Number(row.unbilled_tokens),
        costNano: fromMoneyColumn(row.cost),
        unbilledNano: fromMoneyColumn(row.unbilled),
        serverToolNano: fromMoneyColumn(row.server_tool),
        ledger: lines.get(row.request_id) ?? null,
      }));
    },

    async deleteRecordedBefore(cutoff, limit): Promise<number> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return 0;
      // One bounded batch, chosen through the created_at index. Safe on every instance at once: a row another
      // instance deleted first is simply not deleted again (PostgreSQL re-checks it after waiting on its lock).
      const batch = db.selectFrom('usage_records').select('request_id').where('created_at', '<', cutoff).limit(limit);
      const result = await db.deleteFrom('usage_records').where('request_id', 'in', batch).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

/**
 * The rollup half of settlement, run inside the settlement transaction right after the usage row is inserted
 * (so exactly once per request id, like the row itself): adds the request to its (account, day, model, key) row.
 * One statement: INSERT … ON CONFLICT DO UPDATE adds to the existing row atomically on both dialects.
 */
export async function addToDailyRollup(db: Kysely<Database>, usage: UsageRecord): Promise<void> {
  const add = <T extends number | string = number>(column: string) =>
    sql<T>`${sql.ref(`usage_daily.${column}`)} + ${sql.ref(`excluded.${column}`)}`;
  await db
    .insertInto('usage_daily')
    .values({
      account_id: usage.accountId,
      day: utcDayNumber(usage.createdAt),
      model: usage.model,
      api_key_id: usage.apiKeyId,
      requests: 1,
      input_tokens: usage.inputTokens,
      cache_read_tokens: usage.cacheReadTokens,
      cache_write_tokens: usage.cacheWriteTokens,
      cache_write_1h_tokens: usage.cacheWrite1hTokens,
      output_tokens: usage.outputTokens,
      reasoning_tokens: usage.reasoningTokens,
      // Cast so SQLite adds it as an integer, never as text.
      cost_nano: sql<string>`cast(${toMoneyParameter(usage.costNano)} as bigint)`,
      unbilled_tokens: usage.unbilledTokens ?? 0,
      unbilled_nano: sql<string>`cast(${toMoneyParameter(usage.unbilledNano)} as bigint)`,
    })
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'day', 'model', 'api_key_id']).doUpdateSet({
        requests: add('requests'),
        input_tokens: add('input_tokens'),
        cache_read_tokens: add('cache_read_tokens'),
        cache_write_tokens: add('cache_write_tokens'),
        cache_write_1h_tokens: add('cache_write_1h_tokens'),
        output_tokens: add('output_tokens'),
        reasoning_tokens: add('reasoning_tokens'),
        cost_nano: add<string>('cost_nano'),
        unbilled_tokens: add('unbilled_tokens'),
        unbilled_nano: add<string>('unbilled_nano'),
      }),
    )
    .execute();
}

export function toUsageRow(usage: UsageRecord): Selectable<UsageRecordsTable> {
  return {
    request_id: usage.requestId,
    account_id: usage.accountId,
    api_key_id: usage.apiKeyId,
    model: usage.model,
    family: usage.family,
    input_tokens: usage.inputTokens,
    cache_read_tokens: usage.cacheReadTokens,
    cache_write_tokens: usage.cacheWriteTokens,
    cache_write_1h_tokens: usage.cacheWrite1hTokens,
    output_tokens: usage.outputTokens,
    reasoning_tokens: usage.reasoningTokens,
    status: usage.status,
    stream: toIntegerBoolean(usage.stream),
    latency_ms: usage.latencyMs,
    created_at: usage.createdAt,
    raw_usage: usage.rawUsage,
    cost_nano: toMoneyParameter(usage.costNano),
    free_tokens: usage.freeTokens,
    unbilled_nano: toMoneyParameter(usage.unbilledNano),
    route: usage.route ?? null,
    unbilled_tokens: usage.unbilledTokens ?? 0,
    web_search_requests: usage.webSearchRequests ?? 0,
    web_fetch_requests: usage.webFetchRequests ?? 0,
    server_tool_nano: toMoneyParameter(usage.serverToolNano ?? 0n),
    local_input_tokens: usage.localInputTokens ?? null,
  };
}

/** The server-tool fields of a record that used any (a record without them reads as it was written). */
function serverToolUseOf(row: Selectable<UsageRecordsTable>): Partial<UsageRecord> {
  const searches = Number(row.web_search_requests ?? 0);
  const fetches = Number(row.web_fetch_requests ?? 0);
  if (searches === 0 && fetches === 0) return {};
  return {
    webSearchRequests: searches,
    webFetchRequests: fetches,
    serverToolNano: fromMoneyColumn(row.server_tool_nano),
  };
}

export function toUsageRecord(row: Selectable<UsageRecordsTable>): UsageRecord {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    apiKeyId: row.api_key_id,
    model: row.model,
    family: row.family,
    inputTokens: row.input_tokens,
    cacheReadTokens: row.cache_read_tokens,
    cacheWriteTokens: row.cache_write_tokens,
    cacheWrite1hTokens: Number(row.cache_write_1h_tokens),
    outputTokens: row.output_tokens,
    reasoningTokens: row.reasoning_tokens,
    status: row.status,
    stream: fromIntegerBoolean(row.stream),
    latencyMs: row.latency_ms,
    createdAt: row.created_at,
    rawUsage: row.raw_usage,
    costNano: fromMoneyColumn(row.cost_nano),
    freeTokens: row.free_tokens,
    unbilledNano: fromMoneyColumn(row.unbilled_nano),
    ...(row.route === null || row.route === undefined ? {} : { route: row.route }),
    unbilledTokens: Number(row.unbilled_tokens),
    ...serverToolUseOf(row),
    ...(row.local_input_tokens === null || row.local_input_tokens === undefined
      ? {}
      : { localInputTokens: Number(row.local_input_tokens) }),
  };
}
