import { randomUUID } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import {
  defaultProjectId,
  type ProjectChange,
  type ProjectRecord,
  type ProjectRepository,
} from '../storage/project-types.js';

/** Longest project name: a label in lists and selects. */
export const PROJECT_NAME_MAX = 100;

/** A change that went through: the project as it was and as it is, for the audit log. */
export interface ProjectChanged {
  before: ProjectRecord;
  after: ProjectRecord;
}

/**
 * An organisation's projects: making, renaming, narrowing and archiving them, and which project a new key goes in.
 * Callers check the person's role; every refusal here is the caller's 4xx naming its field, with nothing changed.
 */
export class ProjectService {
  constructor(
    private readonly projects: ProjectRepository,
    private readonly now: () => number = Date.now,
  ) {}

  list(organisationId: string, includeArchived = false): Promise<ProjectRecord[]> {
    return this.projects.list(organisationId, { includeArchived });
  }

  /** A project of the organisation, archived or not, or a 404. */
  async get(organisationId: string, projectId: string): Promise<ProjectRecord> {
    const project = await this.projects.get(organisationId, projectId);
    if (project === null) throw noSuchProject(projectId, 'id');
    return project;
  }

  /** A new project; `models` null allows every model. */
  async create(organisationId: string, name: string, models: readonly string[] | null): Promise<ProjectRecord> {
    const created = await this.projects.create({
      id: `proj_${randomUUID().replaceAll('-', '')}`,
      organisationId,
      name: projectName(name),
      models: models === null ? null : [...models],
      createdAt: this.now(),
    });
    if (created === 'name_taken') throw nameTaken(name);
    return created;
  }

  async rename(organisationId: string, projectId: string, name: string): Promise<ProjectChanged> {
    const checked = projectName(name);
    return changed(await this.projects.rename(organisationId, projectId, checked), projectId, checked);
  }

  async setModels(
    organisationId: string,
    projectId: string,
    models: readonly string[] | null,
  ): Promise<ProjectChanged> {
    const list = models === null ? null : [...models];
    return changed(await this.projects.setModels(organisationId, projectId, list), projectId);
  }

  /**
   * Archives a project: its keys stop working on their next request, on every instance (authentication reads the
   * project with the key). OpenAI's platform does the same: archiving is allowed with live keys, which then fail,
   * and cannot be undone. Refusing instead would make someone revoke every key first for no gain, and the keys
   * list would lose the record of which keys the project had.
   */
  async archive(organisationId: string, projectId: string): Promise<ProjectChanged> {
    return changed(await this.projects.archive(organisationId, projectId, this.now()), projectId);
  }

  /**
   * The project a new key of the organisation goes in: the one asked for when it is a live project of the
   * organisation, else a 400 naming `field`; the default project when none is asked for.
   */
  async projectForNewKey(organisationId: string, projectId: string | undefined, field: string): Promise<string> {
    if (projectId === undefined) return defaultProjectId(organisationId);
    const project = await this.projects.get(organisationId, projectId);
    if (project === null) throw invalidRequest(`No project with id '${projectId}' in this organisation.`, field);
    if (project.archivedAt !== null)
      throw invalidRequest(`The project '${project.name}' is archived: a key cannot be created in it.`, field);
    return project.id;
  }
}

/** A trimmed name of 1 to PROJECT_NAME_MAX characters, without control characters. */
export function projectName(text: string): string {
  const name = text.trim();
  if (name.length === 0 || name.length > PROJECT_NAME_MAX || /\p{Cc}/u.test(name)) {
    throw invalidRequest(`A project name has 1 to ${PROJECT_NAME_MAX} characters and no control characters.`, 'name');
  }
  return name;
}

function changed(result: ProjectChange, projectId: string, name?: string): ProjectChanged {
  switch (result.kind) {
    case 'changed':
      return { before: result.before, after: result.after };
    case 'not_found':
      throw noSuchProject(projectId, 'id');
    case 'archived':
      throw new GatewayError('conflict', 'This project is archived: it cannot be changed.', { param: 'id' });
    case 'name_taken':
      throw nameTaken(name ?? '');
    case 'default_project':
      throw new GatewayError(
        'conflict',
        'The default project cannot be archived: keys created without a project go there.',
        { param: 'id' },
      );
  }
}

function noSuchProject(projectId: string, field: string): GatewayError {
  return new GatewayError('not_found', `No project with id '${projectId}' in this organisation.`, { param: field });
}

function nameTaken(name: string): GatewayError {
  return new GatewayError('conflict', `A live project of this organisation is already named '${name.trim()}'.`, {
    param: 'name',
  });
}
