import type { Kysely } from 'kysely';

/**
 * Where each usage export sink has got to. One definition for both dialects.
 *
 * - `export_cursors`: one row per sink (its configured name). The position is the (created_at, request_id) of the
 *   last usage record the sink's receiver accepted; records after it, in that order, are still to be sent. A row
 *   moves only when its receiver accepted a batch, so a restart resumes where the last accepted batch ended.
 * - `lease_owner` / `lease_expires_at`: the instance exporting the sink now. With several instances on one database
 *   only the lease holder reads and sends, so receivers are not sent every record once per instance.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('export_cursors')
    .addColumn('sink', 'text', (column) => column.primaryKey())
    .addColumn('created_at', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('request_id', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('exported', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('export_cursors').execute();
}
