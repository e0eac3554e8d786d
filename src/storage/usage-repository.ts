import type { Kysely, Selectable } from 'kysely';
import { fromIntegerBoolean, toIntegerBoolean, type Database, type UsageRecordsTable } from './database-schema.js';
import type { UsageRecord, UsageRepository } from './types.js';

export function createUsageRepository(db: Kysely<Database>): UsageRepository {
  return {
    async record(usage: UsageRecord): Promise<boolean> {
      // ON CONFLICT DO NOTHING (both dialects) makes a retried settlement a no-op instead of an error,
      // without a read-before-write race; the affected-row count says which case happened.
      const result = await db
        .insertInto('usage_records')
        .values(toUsageRow(usage))
        .onConflict((conflict) => conflict.column('request_id').doNothing())
        .executeTakeFirst();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },

    async listByAccount(accountId: string, limit: number): Promise<UsageRecord[]> {
      if (!Number.isSafeInteger(limit) || limit <= 0) return [];
      const rows = await db
        .selectFrom('usage_records')
        .selectAll()
        .where('account_id', '=', accountId)
        // Served by the (account_id, created_at) index; request_id makes ties deterministic.
        .orderBy('created_at', 'desc')
        .orderBy('request_id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toUsageRecord);
    },
  };
}

function toUsageRow(usage: UsageRecord): Selectable<UsageRecordsTable> {
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
  };
}

function toUsageRecord(row: Selectable<UsageRecordsTable>): UsageRecord {
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
  };
}
