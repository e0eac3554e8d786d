import type { Kysely } from 'kysely';

/**
 * Cache writes with a 1-hour lifetime, counted apart from 5-minute ones because they are priced apart (Anthropic
 * bills a 1-hour write at 2x input, a 5-minute one at 1.25x). Each new column is the part of its table's
 * `cache_write_tokens` written for an hour, so existing totals keep their meaning, and rows written before it read 0
 * (every write then was priced as a 5-minute one). The usage rows, their daily rollup and the checkpoint a sweeper
 * bills a lost request at all carry it. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('usage_records')
    .addColumn('cache_write_1h_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('usage_daily')
    .addColumn('cache_write_1h_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('checkpoint_cache_write_1h_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('reservations').dropColumn('checkpoint_cache_write_1h_tokens').execute();
  await db.schema.alterTable('usage_daily').dropColumn('cache_write_1h_tokens').execute();
  await db.schema.alterTable('usage_records').dropColumn('cache_write_1h_tokens').execute();
}
