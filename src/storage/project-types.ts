/**
 * Projects (0020-projects): groups of an organisation's keys, each with a model allowlist that narrows its keys'.
 * Times are epoch ms.
 */

/** The default project's id is derived from its organisation's, so a key can be put in it without a lookup. */
const DEFAULT_PROJECT_PREFIX = 'proj_default_';

export const DEFAULT_PROJECT_NAME = 'Default';

export function defaultProjectId(organisationId: string): string {
  return `${DEFAULT_PROJECT_PREFIX}${organisationId}`;
}

export function isDefaultProjectId(projectId: string): boolean {
  return projectId.startsWith(DEFAULT_PROJECT_PREFIX);
}

export interface ProjectRecord {
  id: string;
  organisationId: string;
  name: string;
  /** Model ids and family names the project's keys may use; null: every model. */
  models: string[] | null;
  createdAt: number;
  /** Set once: an archived project's keys stop working, and it cannot be restored. */
  archivedAt: number | null;
}

export type NewProject = Omit<ProjectRecord, 'archivedAt'>;

/** What a project change came to; only `changed` changed anything. */
export type ProjectChange =
  | { kind: 'changed'; before: ProjectRecord; after: ProjectRecord }
  /** No such project in the organisation. */
  | { kind: 'not_found' }
  /** The project is archived: it changes no more. */
  | { kind: 'archived' }
  /** Another live project of the organisation has the name. */
  | { kind: 'name_taken' }
  /** The default project cannot be archived: keys made without a project go there. */
  | { kind: 'default_project' };

export interface ProjectRepository {
  /** A new project; `name_taken` (and nothing written) when a live project of the organisation has the name. */
  create(project: NewProject): Promise<ProjectRecord | 'name_taken'>;
  /** The organisation's projects, the default first, then oldest first; archived ones only when asked. */
  list(organisationId: string, options?: { includeArchived?: boolean }): Promise<ProjectRecord[]>;
  /** A project of that organisation (archived or not); null when there is none. */
  get(organisationId: string, projectId: string): Promise<ProjectRecord | null>;
  rename(organisationId: string, projectId: string, name: string): Promise<ProjectChange>;
  setModels(organisationId: string, projectId: string, models: string[] | null): Promise<ProjectChange>;
  archive(organisationId: string, projectId: string, at: number): Promise<ProjectChange>;
}
