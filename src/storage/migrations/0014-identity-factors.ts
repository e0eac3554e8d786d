import type { Kysely } from 'kysely';

/**
 * Second factors and single sign-on: TOTP, recovery codes, passkeys, the short-lived challenges of the sign-in
 * steps (pending second factor, WebAuthn challenges, OpenID Connect state) and the link of an account to a
 * provider's subject. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('totp_factors')
    .addColumn('account_id', 'text', (column) => column.primaryKey().references('accounts.id'))
    .addColumn('secret', 'text', (column) => column.notNull())
    // Null until the first code confirms the enrolment: an unconfirmed factor asks nothing at sign-in.
    .addColumn('confirmed_at', 'bigint')
    // The last 30-second step a code was accepted for: a code of that step or an earlier one is a replay.
    .addColumn('last_step', 'bigint', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('recovery_codes')
    // SHA-256 of the code: the codes are 80 random bits, so a fast hash is enough (nothing to brute-force).
    .addColumn('code_hash', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('recovery_codes_account_id_idx').on('recovery_codes').column('account_id').execute();

  await db.schema
    .createTable('passkeys')
    // The credential id (base64url), unique across authenticators.
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('public_key', 'text', (column) => column.notNull())
    .addColumn('counter', 'bigint', (column) => column.notNull())
    .addColumn('transports', 'text', (column) => column.notNull())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('passkeys_account_id_idx').on('passkeys').column('account_id').execute();

  await db.schema
    .createTable('identity_challenges')
    // SHA-256 of the token the browser holds; the row is deleted when the step is taken (single use).
    .addColumn('id_hash', 'text', (column) => column.primaryKey())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('account_id', 'text', (column) => column.references('accounts.id'))
    // JSON: the WebAuthn challenge, or the OpenID Connect state, nonce, PKCE verifier and return path.
    .addColumn('payload', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema
    .createIndex('identity_challenges_expires_at_idx')
    .on('identity_challenges')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('sso_identities')
    .addColumn('provider', 'text', (column) => column.notNull())
    .addColumn('subject', 'text', (column) => column.notNull())
    .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id'))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('sso_identities_pkey', ['provider', 'subject'])
    .execute();
  await db.schema.createIndex('sso_identities_account_id_idx').on('sso_identities').column('account_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sso_identities', 'identity_challenges', 'passkeys', 'recovery_codes', 'totp_factors']) {
    await db.schema.dropTable(table).execute();
  }
}
