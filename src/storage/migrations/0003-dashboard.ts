import type { Kysely } from 'kysely';

/**
 * Dashboard sessions and login throttling, kept in the database so that they hold across restarts and across
 * gateway instances. One definition for both dialects, like 0001.
 *
 * Stripe top-ups need no table of their own: each is a ledger entry whose unique idempotency key is the
 * Checkout session id, written in the same transaction as the credit, which is what makes it exactly-once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    // SHA-256 of the cookie's token: a leaked table (or backup) logs nobody in.
    .addColumn('id_hash', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('last_seen_at', 'bigint', (column) => column.notNull())
    .execute();
  // Ending every session of an account (password change, disabled account).
  await db.schema.createIndex('sessions_account_id_idx').on('sessions').column('account_id').execute();
  // Purging expired sessions.
  await db.schema.createIndex('sessions_last_seen_at_idx').on('sessions').column('last_seen_at').execute();

  await db.schema
    .createTable('login_failures')
    .addColumn('id', 'text', (column) => column.primaryKey())
    // `email:<sha-256 of the normalised email>` or `ip:<address>`.
    .addColumn('subject', 'text', (column) => column.notNull())
    .addColumn('failed_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema
    .createIndex('login_failures_subject_failed_at_idx')
    .on('login_failures')
    .columns(['subject', 'failed_at'])
    .execute();

  // Redemption codes minted in the operator view may expire; null (every code before this) never does.
  await db.schema.alterTable('redemption_codes').addColumn('expires_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('redemption_codes').dropColumn('expires_at').execute();
  await db.schema.dropTable('login_failures').execute();
  await db.schema.dropTable('sessions').execute();
}
