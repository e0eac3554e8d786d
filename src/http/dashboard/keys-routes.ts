import type { FastifyInstance, FastifyRequest } from 'fastify';
import { roleAllows } from '../../accounts/organisation-roles.js';
import { z } from 'zod';
import { keySnapshot } from '../../accounts/audit/audit-snapshots.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import { FULL_PERMISSIONS } from '../../storage/key-permission-types.js';
import { smallestAdmissionHold } from '../../billing/billing-service.js';
import { keyMayUseModel } from '../../keys/key-permissions.js';
import type { Membership } from '../../storage/organisation-types.js';
import type { ApiKeyChange, ApiKeyRecord } from '../../storage/types.js';
import { dashboardPermissionShapes, fromDashboardFields, parsePermissionFields } from '../key-permission-fields.js';
import { keyNameSchema } from '../text-fields.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { byPerson } from './audit-actor.js';
import { notFound, roleForbids } from './dashboard-error.js';
import { presentKey } from './presenters.js';

const createKeyBody = z
  .object({
    name: keyNameSchema,
    expiresInDays: z.number().int().min(1).max(3650).nullish(),
    /** Omitted: the organisation's default project. */
    projectId: z.string().min(1).max(200).optional(),
    ...dashboardPermissionShapes,
  })
  .strict();

/** What the edit dialog changes: name and limits (expiry stays as created; rotate for a fresh key). */
const updateKeyBody = z
  .object({
    name: keyNameSchema.optional(),
    ...dashboardPermissionShapes,
  })
  .strict();

type IdParams = { Params: { id: string } };

/**
 * The least a request with this key holds at admission: over the models it may use (its own allowlist and its
 * project's), the cheapest one's.
 */
function smallestHoldFor(
  record: ApiKeyRecord,
  projectModels: readonly string[] | null,
  catalog: DashboardDependencies['catalog'],
): bigint {
  let smallest: bigint | undefined;
  const allowlists = { key: record, project: { models: projectModels } };
  for (const model of catalog.models) {
    if (!keyMayUseModel(allowlists, model)) continue;
    const hold = smallestAdmissionHold(model.prices);
    if (smallest === undefined || hold < smallest) smallest = hold;
  }
  return smallest ?? 1n;
}

/** Who may see which keys: a developer their own, everyone else (read-only or not) all of the organisation's. */
function visibleTo(membership: Membership, accountId: string) {
  const ownOnly = roleAllows(membership.role, 'keys:own') && !roleAllows(membership.role, 'keys:manage');
  return (key: ApiKeyRecord) => !ownOnly || key.createdBy === accountId;
}

/** API keys of the session's organisation: list, create (secret shown once), revoke, rotate. */
export function registerKeysRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  /** The organisation's project allowlists, by project id, for the keys' smallest holds. */
  async function projectModels(organisationId: string): Promise<Map<string, readonly string[] | null>> {
    const projects = await deps.projects.list(organisationId, true);
    return new Map(projects.map((project) => [project.id, project.models]));
  }
  const present = (record: ApiKeyRecord, now: number, models: ReadonlyMap<string, readonly string[] | null>) =>
    presentKey(record, now, smallestHoldFor(record, models.get(record.projectId) ?? null, deps.catalog));
  /**
   * The key a change is about, when the person may change it: every key with `keys:manage`, their own with
   * `keys:own` (the route checked that much). Another organisation's key id is a 404, exactly like an unknown one.
   */
  async function changeableKey(
    request: FastifyRequest<IdParams>,
  ): Promise<{ organisationId: string; key: ApiKeyRecord }> {
    const membership = currentOrganisation(request);
    const organisationId = membership.organisation.id;
    const key = await deps.keys.find(organisationId, request.params.id);
    if (key === null) throw notFound(`No API key with id '${request.params.id}'.`, 'id');
    if (!roleAllows(membership.role, 'keys:manage') && key.createdBy !== currentAccount(request).id)
      throw roleForbids(membership.role, 'keys:manage');
    return { organisationId, key };
  }

  api.get('/keys', { config: { permission: 'organisation:read' } }, async (request) => {
    const visible = visibleTo(currentOrganisation(request), currentAccount(request).id);
    const organisationId = currentOrganisation(request).organisation.id;
    const [all, models] = await Promise.all([deps.keys.list(organisationId), projectModels(organisationId)]);
    const now = deps.now();
    return { keys: all.filter(visible).map((record) => present(record, now, models)) };
  });

  api.post('/keys', { config: { permission: 'keys:own' } }, async (request, reply) => {
    const body = parseInput(createKeyBody, request.body);
    const now = deps.now();
    // A member who may make keys: any permissions (no escalation check, which is for keys managing keys).
    const permissions = { ...FULL_PERMISSIONS, ...parsePermissionFields(fromDashboardFields(body)) };
    const organisationId = currentOrganisation(request).organisation.id;
    const projectId = await deps.projects.projectForNewKey(organisationId, body.projectId, 'projectId');
    const created = await deps.keys.create(organisationId, currentAccount(request).id, {
      name: body.name,
      expiresAt: body.expiresInDays == null ? null : now + body.expiresInDays * MS_PER_DAY,
      permissions,
      projectId,
    });
    await deps.audit.record({
      organisationId: created.record.accountId,
      ...byPerson(request),
      action: 'key.create',
      target: { type: 'key', id: created.record.id },
      after: keySnapshot(created.record),
    });
    const models = await projectModels(organisationId);
    return reply.code(201).send({ key: present(created.record, now, models), secret: created.secret });
  });

  api.patch<IdParams>('/keys/:id', { config: { permission: 'keys:own' } }, async (request) => {
    const body = parseInput(updateKeyBody, request.body);
    const change: ApiKeyChange = parsePermissionFields(fromDashboardFields(body));
    if (body.name !== undefined) change.name = body.name;
    const { organisationId, key } = await changeableKey(request);
    const updated = await deps.keys.update(organisationId, key.id, change);
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'key.update',
      target: { type: 'key', id: updated.id },
      before: keySnapshot(key),
      after: keySnapshot(updated),
    });
    return { key: present(updated, deps.now(), await projectModels(organisationId)) };
  });

  api.post<IdParams>('/keys/:id/revoke', { config: { permission: 'keys:own' } }, async (request) => {
    const { organisationId, key } = await changeableKey(request);
    await deps.keys.revoke(organisationId, key.id);
    const record = await deps.keys.find(organisationId, key.id);
    if (record === null) throw notFound(`No API key with id '${request.params.id}'.`, 'id');
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'key.revoke',
      target: { type: 'key', id: record.id },
      before: keySnapshot(key),
      after: keySnapshot(record),
    });
    return { key: present(record, deps.now(), await projectModels(organisationId)) };
  });

  api.post<IdParams>('/keys/:id/rotate', { config: { permission: 'keys:own' } }, async (request, reply) => {
    const { organisationId, key } = await changeableKey(request);
    const created = await deps.keys.rotate(organisationId, key.id, currentAccount(request).id);
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'key.rotate',
      target: { type: 'key', id: key.id },
      before: keySnapshot(key),
      after: { replacedBy: created.record.id, ...keySnapshot(created.record) },
    });
    const models = await projectModels(organisationId);
    return reply.code(201).send({
      key: present(created.record, deps.now(), models),
      secret: created.secret,
      revokedKeyId: request.params.id,
    });
  });
}
