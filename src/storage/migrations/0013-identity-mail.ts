import { sql, type Kysely } from 'kysely';

/**
 * Verified email, links sent by mail, session details and deleted accounts. One definition for both dialects.
 *
 * - `accounts.email_verified_at`: when the address was proven (epoch ms), null until then. Accounts that exist
 *   before this migration were made without any check and keep working: they count as verified from creation.
 * - `accounts.deleted_at`: a deleted account keeps its row (the ledger and usage point at it) with a tombstone
 *   for an email, no password and no sessions.
 * - `account_tokens`: the single-use links (verify an address, reset a password), stored as the SHA-256 of the
 *   random token only, with what they are for, whose, the address they were sent to, expiry and use.
 * - `sessions.user_agent` / `sessions.ip`: what the sessions list shows to tell devices apart.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('email_verified_at', 'bigint').execute();
  await db.schema.alterTable('accounts').addColumn('deleted_at', 'bigint').execute();
  await sql`update accounts set email_verified_at = created_at`.execute(db);

  await db.schema
    .createTable('account_tokens')
    .addColumn('id_hash', 'text', (column) => column.primaryKey())
    .addColumn('purpose', 'text', (column) =>
      column.notNull().check(sql`purpose in ('verify_email', 'reset_password')`),
    )
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  // Revoking an account's outstanding links (on use, on deletion).
  await db.schema
    .createIndex('account_tokens_account_id_idx')
    .on('account_tokens')
    .columns(['account_id', 'purpose'])
    .execute();

  await db.schema.alterTable('sessions').addColumn('user_agent', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('ip', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('ip').execute();
  await db.schema.alterTable('sessions').dropColumn('user_agent').execute();
  await db.schema.dropTable('account_tokens').execute();
  await db.schema.alterTable('accounts').dropColumn('deleted_at').execute();
  await db.schema.alterTable('accounts').dropColumn('email_verified_at').execute();
}
