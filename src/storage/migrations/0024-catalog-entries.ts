import type { Kysely } from 'kysely';

/**
 * The operator's catalog edits, made at run time (operator view, API, CLI). One definition for both dialects.
 *
 * - `catalog_entries`: one row per edited entry (`kind` model, alias or deployment; `id` its name), its document
 *   as JSON in the same shape as the entry in tollgate.yaml (a deployment names environment variables for its
 *   keys, never a key). Rows per entry, not one document: an edit writes one row, and the history names it.
 * - `catalog_revisions`: one row per change, numbered 1, 2, 3… with no gaps; the highest number is the catalog's
 *   revision, which every instance polls (one read of the primary key's last entry). A change writes revision
 *   n + 1 where n is the revision it was checked against, so two edits checked against the same catalog cannot both
 *   land: the second finds its number taken. The row keeps who changed what, when, and the entry before and after.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('catalog_entries')
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('id', 'text', (column) => column.notNull())
    .addColumn('document', 'text', (column) => column.notNull())
    .addColumn('revision', 'bigint', (column) => column.notNull())
    .addColumn('updated_by', 'text', (column) => column.notNull())
    .addColumn('updated_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('catalog_entries_pkey', ['kind', 'id'])
    .execute();
  await db.schema
    .createTable('catalog_revisions')
    .addColumn('revision', 'bigint', (column) => column.primaryKey())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('entry_id', 'text', (column) => column.notNull())
    .addColumn('action', 'text', (column) => column.notNull())
    .addColumn('before_json', 'text')
    .addColumn('after_json', 'text')
    .addColumn('changed_by', 'text', (column) => column.notNull())
    .addColumn('changed_at', 'bigint', (column) => column.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('catalog_revisions').execute();
  await db.schema.dropTable('catalog_entries').execute();
}
