import type { Kysely } from 'kysely';

/**
 * An organisation's sign-in policy, and what each session and membership must say for it. One definition for both
 * dialects; every column is added with a default or as nullable, so existing rows keep working unchanged.
 *
 * - `organisations.require_second_factor`: 1 when members reach the organisation only from a session that used a
 *   second factor (an authenticator code or a passkey) or single sign-on, and only once they have one set up.
 * - `organisations.required_sso_providers`: null, or the SSO provider ids (comma-separated) whose sessions alone
 *   reach the organisation.
 * - `sessions.sign_in_method`: how the session started (`password`, `second_factor`, `passkey`, `sso`); null on
 *   sessions started before this migration, which count as a password alone. `sessions.sso_provider`: which provider.
 * - `organisation_members.provisioned_by`: the SSO provider that added the member (its role claim keeps the role
 *   in step at each sign-in); null for members who joined otherwise.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('organisations')
    .addColumn('require_second_factor', 'integer', (column) => column.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('organisations').addColumn('required_sso_providers', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('sign_in_method', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('sso_provider', 'text').execute();
  await db.schema.alterTable('organisation_members').addColumn('provisioned_by', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('organisation_members').dropColumn('provisioned_by').execute();
  await db.schema.alterTable('sessions').dropColumn('sso_provider').execute();
  await db.schema.alterTable('sessions').dropColumn('sign_in_method').execute();
  await db.schema.alterTable('organisations').dropColumn('required_sso_providers').execute();
  await db.schema.alterTable('organisations').dropColumn('require_second_factor').execute();
}
