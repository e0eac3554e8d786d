import { sql, type Kysely } from 'kysely';

/**
 * Organisations and their members. One definition for both dialects.
 *
 * - `organisations`: who pays; the billing name and address its receipts carry.
 * - `organisation_members`: a person's role in an organisation (owner, admin, developer, billing, viewer).
 * - `sessions.organisation_id`: the organisation a dashboard session works in (null: the person's first).
 * - `api_keys.created_by`: the person who created a key (null: made before organisations, or by the operator).
 *
 * Every existing account becomes the owner of an organisation named "Personal" that takes the account's own id,
 * so every row keyed by that account (keys, holds, usage, ledger) already names the organisation it belongs to.
 * Deleted accounts keep an organisation for their ledger but are no member of it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organisations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('billing_name', 'text')
    .addColumn('billing_address', 'text')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('organisation_members')
    .addColumn('organisation_id', 'text', (column) => column.notNull().references('organisations.id'))
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('role', 'text', (column) =>
      column.notNull().check(sql`role in ('owner', 'admin', 'developer', 'billing', 'viewer')`),
    )
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('organisation_members_pkey', ['organisation_id', 'account_id'])
    .execute();
  // A person's organisations (the switcher, the session's default).
  await db.schema
    .createIndex('organisation_members_account_id_idx')
    .on('organisation_members')
    .column('account_id')
    .execute();

  await db.schema.alterTable('sessions').addColumn('organisation_id', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('created_by', 'text').execute();

  await sql`insert into organisations (id, name, created_at) select id, 'Personal', created_at from accounts`.execute(
    db,
  );
  await sql`
    insert into organisation_members (organisation_id, account_id, role, created_at)
    select id, id, 'owner', created_at from accounts where deleted_at is null
  `.execute(db);
  await sql`update sessions set organisation_id = account_id`.execute(db);
  await sql`update api_keys set created_by = account_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('created_by').execute();
  await db.schema.alterTable('sessions').dropColumn('organisation_id').execute();
  await db.schema.dropTable('organisation_members').execute();
  await db.schema.dropTable('organisations').execute();
}
