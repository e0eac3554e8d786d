import type { Kysely, Selectable } from 'kysely';
import type { Database } from './database-schema.js';
import { writeTransaction } from './transactions.js';
import type { Storage } from './types.js';
import {
  CatalogRevisionConflict,
  type CatalogEntriesTable,
  type CatalogEntryKind,
  type CatalogEntryRecord,
  type CatalogEntryRepository,
  type CatalogRevisionRecord,
  type CatalogRevisionsTable,
  type CatalogTables,
} from './catalog-entry-types.js';

export function createCatalogEntryRepository(
  base: Kysely<Database>,
  dialect: Storage['dialect'],
): CatalogEntryRepository {
  const db = base.withTables<CatalogTables>();

  const latest = async (executor: Kysely<Database & CatalogTables>): Promise<number> => {
    // The primary key's last entry: one index step whatever the history's length.
    const row = await executor
      .selectFrom('catalog_revisions')
      .select('revision')
      .orderBy('revision', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row === undefined ? 0 : Number(row.revision);
  };

  return {
    revision: () => latest(db),

    async snapshot() {
      // The revision read again after the entries: equal, the entries are those of that revision (no read lock).
      for (;;) {
        const revision = await latest(db);
        const rows = await db.selectFrom('catalog_entries').selectAll().orderBy('kind').orderBy('id').execute();
        if ((await latest(db)) === revision) return { revision, entries: rows.map(toEntry) };
      }
    },

    async write(expected, change) {
      const revision = expected + 1;
      return writeTransaction(base, dialect, async (trx) => {
        const executor = trx.withTables<CatalogTables>();
        const before = await executor
          .selectFrom('catalog_entries')
          .select('document')
          .where('kind', '=', change.kind)
          .where('id', '=', change.id)
          .executeTakeFirst();
        const inserted = await executor
          .insertInto('catalog_revisions')
          .values({
            revision,
            kind: change.kind,
            entry_id: change.id,
            action: change.action,
            before_json: before?.document ?? null,
            after_json: change.document === null ? null : JSON.stringify(change.document),
            changed_by: change.changedBy,
            changed_at: change.at,
          })
          // Another change took the number (it was checked against the same revision): nothing of this one lands.
          .onConflict((conflict) => conflict.column('revision').doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) throw new CatalogRevisionConflict(expected);
        if (change.document === null) {
          await executor
            .deleteFrom('catalog_entries')
            .where('kind', '=', change.kind)
            .where('id', '=', change.id)
            .execute();
        } else {
          const row = {
            kind: change.kind,
            id: change.id,
            document: JSON.stringify(change.document),
            revision,
            updated_by: change.changedBy,
            updated_at: change.at,
          };
          await executor
            .insertInto('catalog_entries')
            .values(row)
            .onConflict((conflict) =>
              conflict.columns(['kind', 'id']).doUpdateSet({
                document: row.document,
                revision: row.revision,
                updated_by: row.updated_by,
                updated_at: row.updated_at,
              }),
            )
            .execute();
        }
        return revision;
      });
    },

    async history(limit) {
      const rows = await db
        .selectFrom('catalog_revisions')
        .selectAll()
        .orderBy('revision', 'desc')
        .limit(Math.max(1, Math.min(limit, 500)))
        .execute();
      return rows.map(toRevision);
    },
  };
}

function parseDocument(text: string | null): Readonly<Record<string, unknown>> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
}

function toEntry(row: Selectable<CatalogEntriesTable>): CatalogEntryRecord {
  return {
    kind: row.kind as CatalogEntryKind,
    id: row.id,
    document: parseDocument(row.document) ?? {},
    revision: Number(row.revision),
    updatedBy: row.updated_by,
    updatedAt: Number(row.updated_at),
  };
}

function toRevision(row: Selectable<CatalogRevisionsTable>): CatalogRevisionRecord {
  return {
    revision: Number(row.revision),
    kind: row.kind as CatalogEntryKind,
    entryId: row.entry_id,
    action: row.action as CatalogRevisionRecord['action'],
    before: parseDocument(row.before_json),
    after: parseDocument(row.after_json),
    changedBy: row.changed_by,
    changedAt: Number(row.changed_at),
  };
}
