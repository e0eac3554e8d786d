import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Self-serve tier upgrades (docs/architecture.md#rate-limits-and-tiers). `accounts.tier` stays the tier every request
 * is limited by (the hot path reads it, unchanged); what it is made of is stored beside it, and every change recomputes
 * it in the same transaction:
 * - `granted_tier`: the operator's tier (CLI `accounts tier`, operator view), a floor;
 * - `bought_tier` until `bought_tier_until` (epoch ms): a tier bought from the balance, renewed at the end of the
 *   period when `bought_tier_renews` is 1 and the balance can pay, otherwise lapsing;
 * - the tier reached by total payments is computed from the ledger, so it needs no column.
 * A purchase is a ledger entry of the new kind `tier`.
 */
const KINDS_BEFORE = `'topup', 'usage', 'refund', 'adjustment', 'redemption'`;
const KINDS_AFTER = `'topup', 'usage', 'refund', 'adjustment', 'redemption', 'tier'`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('granted_tier', 'text', (column) => column.notNull().defaultTo('standard'))
    .execute();
  await sql`update accounts set granted_tier = tier`.execute(db);
  await db.schema.alterTable('accounts').addColumn('bought_tier', 'text').execute();
  await db.schema.alterTable('accounts').addColumn('bought_tier_until', 'bigint').execute();
  await db.schema
    .alterTable('accounts')
    .addColumn('bought_tier_renews', 'integer', (column) => column.notNull().defaultTo(1))
    .execute();
  // The renewal sweeper looks for periods that ended.
  await db.schema.createIndex('accounts_bought_tier_until_idx').on('accounts').column('bought_tier_until').execute();
  await replaceKindCheck(db, KINDS_AFTER);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from ledger_entries where kind = 'tier'`.execute(db);
  await replaceKindCheck(db, KINDS_BEFORE);
  await db.schema.dropIndex('accounts_bought_tier_until_idx').execute();
  for (const column of ['bought_tier_renews', 'bought_tier_until', 'bought_tier', 'granted_tier']) {
    await db.schema.alterTable('accounts').dropColumn(column).execute();
  }
}

/**
 * PostgreSQL swaps the CHECK constraint in place. SQLite cannot alter a constraint: the table is rebuilt as its
 * documented procedure says (new table, copy, drop, rename), keeping every index and trigger any migration put on
 * it, read back from sqlite_master rather than listed here.
 */
async function replaceKindCheck(db: Kysely<unknown>, kinds: string): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table ledger_entries drop constraint ledger_entries_kind_check`.execute(db);
    await sql
      .raw(`alter table ledger_entries add constraint ledger_entries_kind_check check (kind in (${kinds}))`)
      .execute(db);
    return;
  }
  const table = await sql<{
    sql: string;
  }>`select sql from sqlite_master where type = 'table' and name = 'ledger_entries'`.execute(db);
  const definition = table.rows[0]?.sql;
  if (definition === undefined) throw new Error('ledger_entries is missing');
  const replaced = definition.replace(/check\s*\(\s*"?kind"?\s+in\s*\([^)]*\)\s*\)/i, `check (kind in (${kinds}))`);
  if (replaced === definition) throw new Error(`ledger_entries has no kind CHECK constraint to replace: ${definition}`);
  const extras = await sql<{
    sql: string;
  }>`select sql from sqlite_master where tbl_name = 'ledger_entries' and type in ('index', 'trigger') and sql is not null`.execute(
    db,
  );
  await sql
    .raw(replaced.replace(/^create table\s+"?ledger_entries"?/i, 'create table "ledger_entries_rebuilt"'))
    .execute(db);
  await sql`insert into ledger_entries_rebuilt select * from ledger_entries`.execute(db);
  await sql`drop table ledger_entries`.execute(db);
  await sql`alter table ledger_entries_rebuilt rename to ledger_entries`.execute(db);
  for (const { sql: statement } of extras.rows) await sql.raw(statement).execute(db);
}
