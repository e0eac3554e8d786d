import type { Kysely, Selectable } from 'kysely';
import { fromIntegerBoolean, toIntegerBoolean, type Database, type UsageRecordsTable } from './database-schema.js';
import { fromMoneyColumn, money, toMoneyParameter } from './money-sql.js';
import type { UsageRecord, UsageRepository } from './types.js';

/** Every usage column, money through its text cast. */
export function selectUsageColumns(db: Kysely<Database>) {
  return db
    .selectFrom('usage_records')
    .select([
      'request_id', 'account_id', 'api_key_id', 'model', 'family', 'input_tokens', 'cache_read_tokens', 'cache_write_tokens',
      'output_tokens', 'reasoning_tokens', 'status', 'stream', 'latency_ms', 'created_at', 'raw_usage', 'free_tokens',
    ])
    .select([money('cost_nano').as('cost_nano'), money('unbilled_nano').as('unbilled_nano')]);
}

/** Usage rows are written only by settlement (billing-repository.ts), together with the money they cost. */
export function createUsageRepository(db: Kysely<Database>): UsageRepository {
  return {
    async listByAccount(accountId: string, limit: number): Promise<UsageRecord[]> {
      return this.listPage(accountId, limit);
    },

    async listPage(accountId, limit, cursor): Promise<UsageRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      let query = selectUsageColumns(db).where('account_id', '=', accountId);
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
  };
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
  };
}
