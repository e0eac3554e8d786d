import type { Kysely } from 'kysely';

/**
 * Stored Responses (`POST /v1/responses` with `store`, OpenAI's default): what `previous_response_id`,
 * `GET /v1/responses/{id}` and `GET /v1/responses/{id}/input_items` read. One row per response, owned by an
 * account; the bodies are JSON text, bounded in size by the route before they are written. Rows expire after
 * RESPONSES_RETENTION_DAYS (the retention job deletes by `created_at`). One definition for both dialects.
 *
 * And the client route each usage record was served on (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`),
 * now that one account's requests come in three protocols; null for rows settled before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('stored_responses')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    // The `response` object (output items in full, reasoning blobs included).
    .addColumn('response', 'text', (column) => column.notNull())
    // The conversation's input items: those of the previous responses, then this request's own.
    .addColumn('input_items', 'text', (column) => column.notNull())
    .execute();
  // Retention deletes by age.
  await db.schema.createIndex('stored_responses_created_at_idx').on('stored_responses').column('created_at').execute();
  await db.schema.alterTable('usage_records').addColumn('route', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').dropColumn('route').execute();
  await db.schema.dropTable('stored_responses').execute();
}
