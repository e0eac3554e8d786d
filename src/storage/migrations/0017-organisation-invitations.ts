import { sql, type Kysely } from 'kysely';

/**
 * Invitations to join an organisation. One definition for both dialects.
 *
 * - `organisation_invitations`: who is invited (the address as typed and lower-cased), with which role, by whom,
 *   until when; the link's token is stored as its SHA-256 only. `accepted_at` / `revoked_at` end it: a link works
 *   once, and an ended invitation is kept so a second use can say why it no longer works.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organisation_invitations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('organisation_id', 'text', (column) => column.notNull().references('organisations.id'))
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('email_normalized', 'text', (column) => column.notNull())
    .addColumn('role', 'text', (column) =>
      column.notNull().check(sql`role in ('owner', 'admin', 'developer', 'billing', 'viewer')`),
    )
    .addColumn('invited_by', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('accepted_at', 'bigint')
    .addColumn('accepted_by', 'text', (column) => column.references('accounts.id'))
    .addColumn('revoked_at', 'bigint')
    .execute();
  // The pending invitations of an organisation (the members page).
  await db.schema
    .createIndex('organisation_invitations_organisation_id_idx')
    .on('organisation_invitations')
    .column('organisation_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('organisation_invitations').execute();
}
