import { sql, type Kysely } from 'kysely';

/**
 * Balances, reservations, the ledger, the free daily allowance and redemption codes.
 * Money is nano-USD in BIGINT (INTEGER in SQLite: 64-bit), read back through a text cast so no amount ever
 * passes through a JS number. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // The free counters sit on the account row: admission locks that row anyway, so the allowance and the
  // money are decided together, atomically.
  await db.schema
    .alterTable('accounts')
    .addColumn('balance_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('reserved_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('free_day', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('free_used_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('free_reserved_tokens', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();

  await db.schema
    .alterTable('usage_records')
    .addColumn('cost_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('usage_records')
    .addColumn('free_tokens', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('usage_records')
    .addColumn('unbilled_nano', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('reservations')
    .addColumn('request_id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('api_key_id', 'text', (column) => column.notNull())
    .addColumn('hold_nano', 'bigint', (column) => column.notNull())
    .addColumn('free_tokens', 'bigint', (column) => column.notNull())
    .addColumn('free_day', 'integer', (column) => column.notNull())
    .addColumn('max_output_tokens', 'integer', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .execute();
  // The sweeper looks for expired holds.
  await db.schema.createIndex('reservations_expires_at_idx').on('reservations').column('expires_at').execute();

  await db.schema
    .createTable('ledger_entries')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('amount_nano', 'bigint', (column) => column.notNull())
    .addColumn('balance_after_nano', 'bigint', (column) => column.notNull())
    .addColumn('idempotency_key', 'text', (column) => column.notNull())
    .addColumn('request_id', 'text')
    .addColumn('note', 'text')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addCheckConstraint(
      'ledger_entries_kind_check',
      sql`kind in ('topup', 'usage', 'refund', 'adjustment', 'redemption')`,
    )
    .execute();
  await db.schema
    .createIndex('ledger_entries_idempotency_key_key')
    .on('ledger_entries')
    .column('idempotency_key')
    .unique()
    .execute();
  await db.schema
    .createIndex('ledger_entries_account_id_created_at_idx')
    .on('ledger_entries')
    .columns(['account_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('redemption_codes')
    // Codes are stored hashed, like API keys: a leaked table redeems nothing.
    .addColumn('code_hash', 'text', (column) => column.primaryKey())
    .addColumn('amount_nano', 'bigint', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('redeemed_by', 'text', (column) => column.references('accounts.id'))
    .addColumn('redeemed_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('redemption_codes').execute();
  await db.schema.dropTable('ledger_entries').execute();
  await db.schema.dropTable('reservations').execute();
  for (const column of ['cost_nano', 'free_tokens', 'unbilled_nano']) {
    await db.schema.alterTable('usage_records').dropColumn(column).execute();
  }
  for (const column of ['balance_nano', 'reserved_nano', 'free_day', 'free_used_tokens', 'free_reserved_tokens']) {
    await db.schema.alterTable('accounts').dropColumn(column).execute();
  }
}
