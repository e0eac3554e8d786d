import type { Kysely } from 'kysely';

/**
 * What a settlement could not charge, on its ledger line: the reported tokens that neither the free allowance, the
 * balance nor a key's spend limit covered, and their cost at list price (the usage record already carries both as
 * `unbilled_tokens` and `unbilled_nano`). A usage line is written for such a request even when it charged nothing,
 * so the ledger shows every shortfall; rows written before it read 0. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('ledger_entries')
    .addColumn('unbilled_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('ledger_entries')
    .addColumn('unbilled_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ledger_entries').dropColumn('unbilled_nano').execute();
  await db.schema.alterTable('ledger_entries').dropColumn('unbilled_tokens').execute();
}
