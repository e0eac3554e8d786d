import type { Kysely } from 'kysely';

/**
 * What a settlement could not charge, on its ledger line and in the daily rollup: the reported tokens that neither
 * the free allowance, the balance nor a key's spend limit covered, and their cost at list price (the usage record
 * already carries both as `unbilled_tokens` and `unbilled_nano`). A usage line is written for such a request even
 * when it charged nothing, so the ledger shows every shortfall; rows written before it read 0. One definition for
 * both dialects, like 0001.
 */
const TABLES = ['ledger_entries', 'usage_daily'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    for (const column of ['unbilled_tokens', 'unbilled_nano']) {
      await db.schema
        .alterTable(table)
        .addColumn(column, 'bigint', (definition) => definition.notNull().defaultTo(0))
        .execute();
    }
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).dropColumn('unbilled_nano').execute();
    await db.schema.alterTable(table).dropColumn('unbilled_tokens').execute();
  }
}
