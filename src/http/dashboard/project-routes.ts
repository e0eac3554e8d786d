import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { projectSnapshot } from '../../accounts/audit/audit-snapshots.js';
import { isDefaultProjectId, type ProjectRecord } from '../../storage/project-types.js';
import { parseModels, permissionFieldShapes } from '../key-permission-fields.js';
import { byPerson } from './audit-actor.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';

const projectNameSchema = z.string().max(400);

const createProjectBody = z.object({ name: projectNameSchema, models: permissionFieldShapes.models }).strict();

const updateProjectBody = z
  .object({ name: projectNameSchema.optional(), models: permissionFieldShapes.models })
  .strict();

type IdParams = { Params: { id: string } };

/**
 * The projects of the session's organisation: every member reads them; owners and admins (`limits:manage`) create,
 * rename, set the model allowlist of and archive them. Each change goes to the audit log with before and after.
 */
export function registerProjectRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get<{ Querystring: { archived?: string } }>(
    '/projects',
    { config: { permission: 'organisation:read' } },
    async (request) => {
      const organisationId = currentOrganisation(request).organisation.id;
      const includeArchived = request.query.archived === 'true' || request.query.archived === '1';
      const projects = await deps.projects.list(organisationId, includeArchived);
      return { projects: projects.map(presentProject) };
    },
  );

  api.post('/projects', { config: { permission: 'limits:manage' } }, async (request, reply) => {
    const body = parseInput(createProjectBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    const models = body.models == null ? null : parseModels(body.models);
    const created = await deps.projects.create(organisationId, body.name, models);
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'project.created',
      target: { type: 'project', id: created.id },
      after: projectSnapshot(created),
    });
    return reply.code(201).send({ project: presentProject(created) });
  });

  api.patch<IdParams>('/projects/:id', { config: { permission: 'limits:manage' } }, async (request) => {
    const body = parseInput(updateProjectBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    // Both fields are checked before either is written: a bad allowlist leaves the name as it was too.
    const models = body.models === undefined ? undefined : body.models === null ? null : parseModels(body.models);
    let project = await deps.projects.get(organisationId, request.params.id);
    if (body.name !== undefined) {
      const { before, after } = await deps.projects.rename(organisationId, project.id, body.name);
      if (before.name !== after.name)
        await deps.audit.record({
          organisationId,
          ...byPerson(request),
          action: 'project.renamed',
          target: { type: 'project', id: project.id },
          before: { name: before.name },
          after: { name: after.name },
        });
      project = after;
    }
    if (models !== undefined) {
      const { before, after } = await deps.projects.setModels(organisationId, project.id, models);
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'project.models_changed',
        target: { type: 'project', id: project.id },
        before: { models: before.models },
        after: { models: after.models },
      });
      project = after;
    }
    return { project: presentProject(project) };
  });

  api.post<IdParams>('/projects/:id/archive', { config: { permission: 'limits:manage' } }, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { before, after } = await deps.projects.archive(organisationId, request.params.id);
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'project.archived',
      target: { type: 'project', id: after.id },
      before: projectSnapshot(before),
      after: projectSnapshot(after),
    });
    return { project: presentProject(after) };
  });
}

/** A project for the dashboard (times in epoch ms). */
export function presentProject(project: ProjectRecord) {
  return {
    id: project.id,
    name: project.name,
    models: project.models,
    isDefault: isDefaultProjectId(project.id),
    createdAt: project.createdAt,
    archivedAt: project.archivedAt,
  };
}
