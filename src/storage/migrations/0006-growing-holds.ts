import type { Kysely } from 'kysely';

/**
 * Holds that grow with the reply, and carry a checkpoint of what it delivered (issues 20 and 21).
 *
 * A reservation's `hold_nano`, `free_tokens` and `max_output_tokens` now grow a slice at a time while its request
 * runs (`max_output_tokens` is the output granted so far). The checkpoint columns say what the request had
 * delivered when its instance last wrote them (with a slice grant, and by the instance's periodic batch): a hold
 * whose instance died is settled by any sweeper at that checkpoint (`instance_lost`) instead of released free.
 * `checkpoint_at` null: nothing delivered yet (a crash before the first output costs nothing, as a vendor failure
 * before any output does).
 *
 * `usage_records.unbilled_tokens`: output the vendor produced after the account's balance refused a slice and
 * before the upstream closed, which the client never received and is not billed for.
 * One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('reservations').addColumn('model', 'text').execute();
  await db.schema.alterTable('reservations').addColumn('family', 'text').execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('stream', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('checkpoint_input_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('checkpoint_cache_read_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('checkpoint_cache_write_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reservations')
    .addColumn('checkpoint_output_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('reservations').addColumn('checkpoint_at', 'bigint').execute();
  await db.schema
    .alterTable('usage_records')
    .addColumn('unbilled_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').dropColumn('unbilled_tokens').execute();
  for (const column of [
    'checkpoint_at',
    'checkpoint_output_tokens',
    'checkpoint_cache_write_tokens',
    'checkpoint_cache_read_tokens',
    'checkpoint_input_tokens',
    'stream',
    'family',
    'model',
  ]) {
    await db.schema.alterTable('reservations').dropColumn(column).execute();
  }
}
