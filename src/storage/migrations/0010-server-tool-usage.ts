import type { Kysely } from 'kysely';

/**
 * Uses of vendor-run tools on each usage record: web searches and web fetches the vendor ran for the reply, and
 * what they cost at the model's per-use prices (a part of `cost_nano`, which stays the request's whole charge).
 * Rows written before read 0: no request could use such tools then. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('usage_records')
    .addColumn('web_search_requests', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('usage_records')
    .addColumn('web_fetch_requests', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('usage_records')
    .addColumn('server_tool_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').dropColumn('server_tool_nano').execute();
  await db.schema.alterTable('usage_records').dropColumn('web_fetch_requests').execute();
  await db.schema.alterTable('usage_records').dropColumn('web_search_requests').execute();
}
