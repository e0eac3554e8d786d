import { sql, type Kysely } from 'kysely';
import { ACCOUNTS_EMAIL_UNIQUE_INDEX, API_KEYS_HASH_UNIQUE_INDEX } from '../database-schema.js';

/**
 * Accounts, API keys and usage records.
 *
 * Written with Kysely's schema builder only, so this one definition produces valid DDL for both SQLite
 * and PostgreSQL. Migrations take `Kysely<unknown>` on purpose: they must not depend on the current
 * `Database` type, which describes the schema after the latest migration, not after this one.
 * Column types: `bigint` for epoch-ms times (INTEGER affinity in SQLite), `integer` for 0/1 booleans,
 * token counts and latency; see database-schema.ts.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('email_normalized', 'text', (column) => column.notNull())
    .addColumn('password_hash', 'text', (column) => column.notNull())
    .addColumn('role', 'text', (column) => column.notNull())
    .addColumn('tier', 'text', (column) => column.notNull())
    .addColumn('disabled', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addCheckConstraint('accounts_role_check', sql`role in ('user', 'admin')`)
    .addCheckConstraint('accounts_disabled_check', sql`disabled in (0, 1)`)
    .execute();
  // A named unique index rather than a column constraint: pg reports the index name on violation,
  // which is how the repository tells a duplicate email from any other unique violation.
  await db.schema.createIndex(ACCOUNTS_EMAIL_UNIQUE_INDEX).on('accounts').column('email_normalized').unique().execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('key_hash', 'text', (column) => column.notNull())
    .addColumn('hint', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .execute();
  // Every authenticated request looks its key up by hash.
  await db.schema.createIndex(API_KEYS_HASH_UNIQUE_INDEX).on('api_keys').column('key_hash').unique().execute();
  // Listing an account's keys; also backs the foreign key (pg does not index referencing columns itself).
  await db.schema.createIndex('api_keys_account_id_idx').on('api_keys').column('account_id').execute();

  await db.schema
    .createTable('usage_records')
    // The gateway's request id: the primary key is what makes recording idempotent.
    .addColumn('request_id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    // Keys are revoked, never deleted, so this reference never blocks a delete in practice
    // and needs no index of its own.
    .addColumn('api_key_id', 'text', (column) => column.notNull().references('api_keys.id'))
    .addColumn('model', 'text', (column) => column.notNull())
    .addColumn('family', 'text', (column) => column.notNull())
    .addColumn('input_tokens', 'integer', (column) => column.notNull())
    .addColumn('cache_read_tokens', 'integer', (column) => column.notNull())
    .addColumn('cache_write_tokens', 'integer', (column) => column.notNull())
    .addColumn('output_tokens', 'integer', (column) => column.notNull())
    .addColumn('reasoning_tokens', 'integer', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('stream', 'integer', (column) => column.notNull())
    .addColumn('latency_ms', 'integer', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('raw_usage', 'text')
    .addCheckConstraint('usage_records_stream_check', sql`stream in (0, 1)`)
    .execute();
  // An account's usage history, newest first.
  await db.schema
    .createIndex('usage_records_account_id_created_at_idx')
    .on('usage_records')
    .columns(['account_id', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Reverse order of creation, so foreign keys never point at a dropped table.
  await db.schema.dropTable('usage_records').execute();
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('accounts').execute();
}
