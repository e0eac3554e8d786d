import type { Kysely, Selectable, Updateable } from 'kysely';
import type { Database, ProjectsTable, UniqueIndexTarget, UniqueViolationDetector } from './database-schema.js';
import {
  DEFAULT_PROJECT_NAME,
  defaultProjectId,
  isDefaultProjectId,
  type ProjectChange,
  type ProjectRecord,
  type ProjectRepository,
} from './project-types.js';
import { writeTransaction } from './transactions.js';
import type { Storage } from './types.js';

/** The partial unique index of 0020-projects: names are unique among an organisation's live projects. */
const PROJECTS_LIVE_NAME_UNIQUE: UniqueIndexTarget = {
  indexName: 'projects_organisation_live_name_key',
  table: 'projects',
  columns: ['organisation_id', 'name'],
};

export function createProjectRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  isUniqueViolation: UniqueViolationDetector,
): ProjectRepository {
  /**
   * One change to a live project, in one transaction: the row read before (for the audit log's before/after) and
   * written by a conditional update, so two archivings at once archive once and a rename of an archived project
   * changes nothing.
   */
  async function change(
    organisationId: string,
    projectId: string,
    values: Updateable<ProjectsTable>,
    refuse?: (before: ProjectRecord) => ProjectChange | null,
  ): Promise<ProjectChange> {
    try {
      return await writeTransaction(db, dialect, async (trx) => {
        let read = trx
          .selectFrom('projects')
          .selectAll()
          .where('organisation_id', '=', organisationId)
          .where('id', '=', projectId);
        // No key changes: new keys may still reference the row (their FOR KEY SHARE) while it is held.
        if (dialect === 'postgres') read = read.forNoKeyUpdate();
        const row = await read.executeTakeFirst();
        if (row === undefined) return { kind: 'not_found' };
        const before = toProjectRecord(row);
        if (before.archivedAt !== null) return { kind: 'archived' };
        const refused = refuse?.(before);
        if (refused) return refused;
        await trx.updateTable('projects').set(values).where('id', '=', projectId).execute();
        const after = await trx
          .selectFrom('projects')
          .selectAll()
          .where('id', '=', projectId)
          .executeTakeFirstOrThrow();
        return { kind: 'changed', before, after: toProjectRecord(after) };
      });
    } catch (error) {
      if (isUniqueViolation(error, PROJECTS_LIVE_NAME_UNIQUE)) return { kind: 'name_taken' };
      throw error;
    }
  }

  return {
    async create(project) {
      try {
        await db
          .insertInto('projects')
          .values({
            id: project.id,
            organisation_id: project.organisationId,
            name: project.name,
            models: joinModels(project.models),
            created_at: project.createdAt,
            archived_at: null,
          })
          .execute();
      } catch (error) {
        // Insert-and-catch rather than check-then-insert: only the unique index is race-free.
        if (isUniqueViolation(error, PROJECTS_LIVE_NAME_UNIQUE)) return 'name_taken';
        throw error;
      }
      return { ...project, archivedAt: null };
    },

    async list(organisationId, options = {}) {
      let query = db.selectFrom('projects').selectAll().where('organisation_id', '=', organisationId);
      if (options.includeArchived !== true) query = query.where('archived_at', 'is', null);
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      const projects = rows.map(toProjectRecord);
      // The default project first: it is where keys made without a project go.
      return [
        ...projects.filter((project) => isDefaultProjectId(project.id)),
        ...projects.filter((project) => !isDefaultProjectId(project.id)),
      ];
    },

    async get(organisationId, projectId) {
      const row = await db
        .selectFrom('projects')
        .selectAll()
        .where('organisation_id', '=', organisationId)
        .where('id', '=', projectId)
        .executeTakeFirst();
      return row === undefined ? null : toProjectRecord(row);
    },

    rename(organisationId, projectId, name) {
      return change(organisationId, projectId, { name });
    },

    setModels(organisationId, projectId, models) {
      return change(organisationId, projectId, { models: joinModels(models) });
    },

    archive(organisationId, projectId, at) {
      return change(organisationId, projectId, { archived_at: at }, (before) =>
        isDefaultProjectId(before.id) ? { kind: 'default_project' } : null,
      );
    },
  };
}

/** The row of an organisation's default project, written with the organisation. */
export function defaultProjectRow(organisationId: string, createdAt: number): Selectable<ProjectsTable> {
  return {
    id: defaultProjectId(organisationId),
    organisation_id: organisationId,
    name: DEFAULT_PROJECT_NAME,
    models: null,
    created_at: createdAt,
    archived_at: null,
  };
}

export function joinModels(models: readonly string[] | null): string | null {
  return models === null ? null : models.join(' ');
}

export function splitModels(value: string | null): string[] | null {
  return value === null ? null : value.split(' ').filter((entry) => entry.length > 0);
}

export function toProjectRecord(row: Selectable<ProjectsTable>): ProjectRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    name: row.name,
    models: splitModels(row.models),
    createdAt: Number(row.created_at),
    archivedAt: row.archived_at === null ? null : Number(row.archived_at),
  };
}
