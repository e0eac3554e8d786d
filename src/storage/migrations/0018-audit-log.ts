import { sql, type Kysely } from 'kysely';

/**
 * The audit log: one row per change a person, the operator or the gateway itself made to an organisation's keys,
 * tier, settings or money. One definition for both dialects. Append-only: the code has no path that updates or
 * deletes a row (retention is a later concern).
 *
 * - `actor_type`: `person` (a member acting in the dashboard or with an API key), `operator` (the CLI, or an
 *   operator account in the operator view) or `system` (a payment provider's webhook).
 * - `actor_id`, `actor_email`: the person as they were at the time (the email is copied, not joined).
 * - `actor_key_id`: the API key that made the call, for `/v1` calls.
 * - `before_json`, `after_json`: the values the change replaced and wrote, as JSON; never a secret.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organisation_id', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('actor_type', 'text', (column) =>
      column.notNull().check(sql`actor_type in ('person', 'operator', 'system')`),
    )
    .addColumn('actor_id', 'text')
    .addColumn('actor_email', 'text')
    .addColumn('actor_key_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('action', 'text', (column) => column.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('before_json', 'text')
    .addColumn('after_json', 'text')
    .execute();
  // The organisation's log, newest first, in keyset pages of (created_at, id).
  await db.schema
    .createIndex('audit_events_organisation_created_idx')
    .on('audit_events')
    .columns(['organisation_id', 'created_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('audit_events').execute();
}
