import { sql, type Kysely } from 'kysely';

/**
 * Daily usage rollup, and an index for usage retention.
 *
 * `usage_daily` holds one row per (account, UTC day, model, key) with the request count, token sums and cost of
 * every usage record of that day. Settlement upserts it in the same transaction as the usage row
 * (each database's billing store), so it stays exactly-once with it; per-request rows may then be deleted after the
 * retention period (usage-retention) while the daily totals are kept forever.
 *
 * `day` is the UTC day number (epoch ms / 86,400,000, as an integer): one integer comparison on both dialects,
 * and computable in SQL for the backfill below. Sums are BIGINT: a busy key's daily token count can pass 2^31.
 * Independent of 0003 (it touches no table 0003 creates), so the two apply in either order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('usage_daily')
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('day', 'integer', (column) => column.notNull())
    .addColumn('model', 'text', (column) => column.notNull())
    .addColumn('api_key_id', 'text', (column) => column.notNull())
    .addColumn('requests', 'bigint', (column) => column.notNull())
    .addColumn('input_tokens', 'bigint', (column) => column.notNull())
    .addColumn('cache_read_tokens', 'bigint', (column) => column.notNull())
    .addColumn('cache_write_tokens', 'bigint', (column) => column.notNull())
    .addColumn('output_tokens', 'bigint', (column) => column.notNull())
    .addColumn('reasoning_tokens', 'bigint', (column) => column.notNull())
    .addColumn('cost_nano', 'bigint', (column) => column.notNull())
    // Leading account_id and day: an account's range of days is one index range scan.
    .addPrimaryKeyConstraint('usage_daily_pkey', ['account_id', 'day', 'model', 'api_key_id'])
    .execute();
  // The operator's all-accounts view scans a range of days.
  await db.schema.createIndex('usage_daily_day_idx').on('usage_daily').column('day').execute();

  // Retention deletes the oldest usage rows across all accounts in batches: by created_at alone.
  await db.schema.createIndex('usage_records_created_at_idx').on('usage_records').column('created_at').execute();

  // Backfill from the usage rows recorded so far. The divisor is a literal: SQLite binds a JS number as REAL,
  // which would make the division fractional. Both dialects divide integers to an integer.
  await sql`
    insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
      cache_write_tokens, output_tokens, reasoning_tokens, cost_nano)
    select account_id, cast(created_at / ${sql.lit(86_400_000)} as integer), model, api_key_id, count(*),
      sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens),
      sum(cost_nano)
    from usage_records
    group by account_id, cast(created_at / ${sql.lit(86_400_000)} as integer), model, api_key_id
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('usage_records_created_at_idx').execute();
  await db.schema.dropTable('usage_daily').execute();
}
