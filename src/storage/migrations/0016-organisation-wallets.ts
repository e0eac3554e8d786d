import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * The wallet moves from the person to the organisation. One definition for both dialects.
 *
 * - The money (`balance_nano`, `reserved_nano`), the free-allowance counters (`free_day`, `free_used_tokens`,
 *   `free_reserved_tokens`) and the tier columns (`tier`, `granted_tier`, `bought_tier`, `bought_tier_until`,
 *   `bought_tier_renews`) are copied from each account to its personal organisation (same id, 0015-organisations),
 *   then dropped from `accounts`.
 * - `organisations.disabled`: requests with the organisation's keys are refused; a disabled account's personal
 *   organisation starts disabled, as its keys were refused before. `accounts.disabled` stays the person's sign-in switch.
 * - The billing tables keep their `account_id` column (and `redemption_codes.redeemed_by`), which now names the
 *   organisation: their foreign keys move from `accounts` to `organisations`, so a key of a non-personal organisation
 *   can be stored, billed and settled.
 */
const MONEY_COLUMNS = ['balance_nano', 'reserved_nano', 'free_day', 'free_used_tokens', 'free_reserved_tokens'];
const TIER_COLUMNS = ['tier', 'granted_tier', 'bought_tier', 'bought_tier_until', 'bought_tier_renews'];
const MOVED_COLUMNS = [...MONEY_COLUMNS, ...TIER_COLUMNS];

/** Tables whose column named the account that pays and now names the organisation. */
const WALLET_REFERENCES = [
  { table: 'api_keys', column: 'account_id' },
  { table: 'usage_records', column: 'account_id' },
  { table: 'reservations', column: 'account_id' },
  { table: 'ledger_entries', column: 'account_id' },
  { table: 'usage_daily', column: 'account_id' },
  { table: 'stored_responses', column: 'account_id' },
  { table: 'redemption_codes', column: 'redeemed_by' },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await addWalletColumns(db, 'organisations');
  await db.schema
    .alterTable('organisations')
    .addColumn('disabled', 'integer', (column) => column.notNull().defaultTo(0).check(sql`disabled in (0, 1)`))
    .execute();
  const moved = MOVED_COLUMNS.join(', ');
  // Row values (SQLite 3.15+, PostgreSQL): every column in one pass, copied as stored, so no amount is converted.
  await sql
    .raw(`
      update organisations set (${moved}, disabled) =
        (select ${MOVED_COLUMNS.map((column) => `a.${column}`).join(', ')}, a.disabled
         from accounts a where a.id = organisations.id)
      where exists (select 1 from accounts a where a.id = organisations.id)`)
    .execute(db);
  // The renewal sweeper looks for periods that ended, now on the organisation.
  await db.schema.dropIndex('accounts_bought_tier_until_idx').execute();
  await db.schema
    .createIndex('organisations_bought_tier_until_idx')
    .on('organisations')
    .column('bought_tier_until')
    .execute();
  for (const column of MOVED_COLUMNS) await db.schema.alterTable('accounts').dropColumn(column).execute();
  for (const reference of WALLET_REFERENCES) await pointReference(db, reference, 'accounts', 'organisations');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const reference of WALLET_REFERENCES) await pointReference(db, reference, 'organisations', 'accounts');
  await addWalletColumns(db, 'accounts');
  const moved = MOVED_COLUMNS.join(', ');
  await sql
    .raw(`
      update accounts set (${moved}) =
        (select ${MOVED_COLUMNS.map((column) => `o.${column}`).join(', ')} from organisations o where o.id = accounts.id)
      where exists (select 1 from organisations o where o.id = accounts.id)`)
    .execute(db);
  await db.schema.dropIndex('organisations_bought_tier_until_idx').execute();
  await db.schema.createIndex('accounts_bought_tier_until_idx').on('accounts').column('bought_tier_until').execute();
  for (const column of [...MOVED_COLUMNS, 'disabled']) {
    await db.schema.alterTable('organisations').dropColumn(column).execute();
  }
}

/** The wallet's columns with the defaults 0002-billing and 0008-tier-upgrades gave them on `accounts`. */
async function addWalletColumns(db: Kysely<unknown>, table: string): Promise<void> {
  for (const column of ['balance_nano', 'reserved_nano']) {
    await db.schema
      .alterTable(table)
      .addColumn(column, 'bigint', (definition) => definition.notNull().defaultTo(0))
      .execute();
  }
  await db.schema
    .alterTable(table)
    .addColumn('free_day', 'integer', (definition) => definition.notNull().defaultTo(0))
    .execute();
  for (const column of ['free_used_tokens', 'free_reserved_tokens']) {
    await db.schema
      .alterTable(table)
      .addColumn(column, 'bigint', (definition) => definition.notNull().defaultTo(0))
      .execute();
  }
  for (const column of ['tier', 'granted_tier']) {
    await db.schema
      .alterTable(table)
      .addColumn(column, 'text', (definition) => definition.notNull().defaultTo('standard'))
      .execute();
  }
  await db.schema.alterTable(table).addColumn('bought_tier', 'text').execute();
  await db.schema.alterTable(table).addColumn('bought_tier_until', 'bigint').execute();
  await db.schema
    .alterTable(table)
    .addColumn('bought_tier_renews', 'integer', (definition) => definition.notNull().defaultTo(1))
    .execute();
}

/**
 * Moves a column's foreign key from one table's `id` to another's. PostgreSQL swaps the constraint (named as
 * PostgreSQL named the column-level reference). SQLite cannot alter a constraint, so the table is rebuilt from its
 * own definition in sqlite_master with the reference replaced, keeping its indexes and triggers. `api_keys` is itself
 * referenced (usage_records.api_key_id) and foreign keys are on, so the check is deferred to the commit and the table
 * is recreated under its own name before its rows go back: their children find them again by the time it runs.
 */
async function pointReference(
  db: Kysely<unknown>,
  { table, column }: (typeof WALLET_REFERENCES)[number],
  from: string,
  to: string,
): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const constraint = `${table}_${column}_fkey`;
    await sql.raw(`alter table ${table} drop constraint ${constraint}`).execute(db);
    await sql
      .raw(`alter table ${table} add constraint ${constraint} foreign key (${column}) references ${to} (id)`)
      .execute(db);
    return;
  }
  const found = await sql<{
    sql: string;
  }>`select sql from sqlite_master where type = 'table' and name = ${table}`.execute(db);
  const definition = found.rows[0]?.sql;
  if (definition === undefined) throw new Error(`${table} is missing`);
  const reference = new RegExp(`("?${column}"?[^,]*?references\\s+)"?${from}"?(\\s*\\(\\s*"?id"?\\s*\\))`, 'i');
  const replaced = definition.replace(reference, `$1"${to}"$2`);
  if (replaced === definition) throw new Error(`${table}.${column} has no reference to ${from} to move: ${definition}`);
  const extras = await sql<{
    sql: string;
  }>`select sql from sqlite_master where tbl_name = ${table} and type in ('index', 'trigger') and sql is not null`.execute(
    db,
  );
  await sql`pragma defer_foreign_keys = on`.execute(db);
  await sql.raw(`create temp table ${table}_moving as select * from ${table}`).execute(db);
  await sql.raw(`drop table ${table}`).execute(db);
  await sql.raw(replaced).execute(db);
  await sql.raw(`insert into ${table} select * from ${table}_moving`).execute(db);
  await sql.raw(`drop table ${table}_moving`).execute(db);
  for (const { sql: statement } of extras.rows) await sql.raw(statement).execute(db);
}
