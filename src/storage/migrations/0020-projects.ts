import { sql, type Kysely } from 'kysely';

/**
 * Projects: an organisation's keys grouped, each group with its own model allowlist. One definition for both dialects.
 *
 * - `projects`: `models` is the space-separated allowlist (model ids or family names, as a key's), null for every
 *   model; `archived_at` set once and never cleared. A name is unique among an organisation's live projects only, so
 *   an archived project's name may be taken again.
 * - `api_keys.project_id`: the project a key belongs to.
 *
 * Every organisation gets a "Default" project whose id is derived from the organisation's (`proj_default_` and the
 * organisation's id), the rule new organisations follow too, and every existing key goes into its organisation's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organisation_id', 'text', (column) => column.notNull().references('organisations.id'))
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('models', 'text')
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('archived_at', 'bigint')
    .execute();
  // Unique names among live projects; also the organisation's projects list.
  await db.schema
    .createIndex('projects_organisation_live_name_key')
    .on('projects')
    .columns(['organisation_id', 'name'])
    .unique()
    .where(sql.ref('archived_at'), 'is', null)
    .execute();
  await db.schema.createIndex('projects_organisation_id_idx').on('projects').column('organisation_id').execute();

  await db.schema
    .alterTable('api_keys')
    .addColumn('project_id', 'text', (column) => column.references('projects.id'))
    .execute();

  await sql`
    insert into projects (id, organisation_id, name, models, created_at, archived_at)
    select 'proj_default_' || id, id, 'Default', null, created_at, null from organisations
  `.execute(db);
  await sql`update api_keys set project_id = 'proj_default_' || account_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('project_id').execute();
  await db.schema.dropTable('projects').execute();
}
