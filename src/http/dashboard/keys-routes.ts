import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { keySnapshot } from '../../accounts/audit/audit-snapshots.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import { FULL_PERMISSIONS } from '../../storage/key-permission-types.js';
import { smallestAdmissionHold } from '../../billing/billing-service.js';
import { modelAllowed } from '../../keys/key-permissions.js';
import type { ApiKeyChange, ApiKeyRecord } from '../../storage/types.js';
import { dashboardPermissionShapes, fromDashboardFields, parsePermissionFields } from '../key-permission-fields.js';
import { keyNameSchema } from '../text-fields.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount } from './dashboard-session.js';
import { personActor } from './audit-actor.js';
import { notFound } from './dashboard-error.js';
import { presentKey } from './presenters.js';

const createKeyBody = z
  .object({
    name: keyNameSchema,
    expiresInDays: z.number().int().min(1).max(3650).nullish(),
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

/** The least a request with this key holds at admission: over the models it may use, the cheapest one's. */
function smallestHoldFor(record: ApiKeyRecord, catalog: DashboardDependencies['catalog']): bigint {
  let smallest: bigint | undefined;
  for (const model of catalog.models) {
    if (!modelAllowed(record.permissions, model)) continue;
    const hold = smallestAdmissionHold(model.prices);
    if (smallest === undefined || hold < smallest) smallest = hold;
  }
  return smallest ?? 1n;
}

/** API keys of the logged-in account: list, create (secret shown once), revoke, rotate. */
export function registerKeysRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const present = (record: ApiKeyRecord, now: number) => presentKey(record, now, smallestHoldFor(record, deps.catalog));
  api.get('/keys', async (request) => {
    const records = await deps.keys.list(currentAccount(request).id);
    const now = deps.now();
    return { keys: records.map((record) => present(record, now)) };
  });

  api.post('/keys', async (request, reply) => {
    const body = parseInput(createKeyBody, request.body);
    const now = deps.now();
    // The account's owner: any permissions (no escalation check, which is for keys managing keys).
    const permissions = { ...FULL_PERMISSIONS, ...parsePermissionFields(fromDashboardFields(body)) };
    const account = currentAccount(request);
    const created = await deps.keys.create(account.id, account.id, {
      name: body.name,
      expiresAt: body.expiresInDays == null ? null : now + body.expiresInDays * MS_PER_DAY,
      permissions,
    });
    await deps.audit.record({
      organisationId: created.record.accountId,
      actor: personActor(request),
      ip: request.ip,
      action: 'key.create',
      target: { type: 'key', id: created.record.id },
      after: keySnapshot(created.record),
    });
    return reply.code(201).send({ key: present(created.record, now), secret: created.secret });
  });

  api.patch<IdParams>('/keys/:id', async (request) => {
    const body = parseInput(updateKeyBody, request.body);
    const change: ApiKeyChange = parsePermissionFields(fromDashboardFields(body));
    if (body.name !== undefined) change.name = body.name;
    const accountId = currentAccount(request).id;
    const before = await deps.keys.find(accountId, request.params.id);
    const updated = await deps.keys.update(accountId, request.params.id, change);
    await deps.audit.record({
      organisationId: updated.accountId,
      actor: personActor(request),
      ip: request.ip,
      action: 'key.update',
      target: { type: 'key', id: updated.id },
      before: before === null ? null : keySnapshot(before),
      after: keySnapshot(updated),
    });
    return { key: present(updated, deps.now()) };
  });

  // KeyService scopes every lookup to the account: another account's key id is a 404, exactly like an unknown one.
  api.post<IdParams>('/keys/:id/revoke', async (request) => {
    const accountId = currentAccount(request).id;
    const before = await deps.keys.find(accountId, request.params.id);
    await deps.keys.revoke(accountId, request.params.id);
    const record = (await deps.keys.list(accountId)).find((key) => key.id === request.params.id);
    if (record === undefined) throw notFound(`No API key with id '${request.params.id}'.`);
    await deps.audit.record({
      organisationId: record.accountId,
      actor: personActor(request),
      ip: request.ip,
      action: 'key.revoke',
      target: { type: 'key', id: record.id },
      before: before === null ? null : keySnapshot(before),
      after: keySnapshot(record),
    });
    return { key: present(record, deps.now()) };
  });

  api.post<IdParams>('/keys/:id/rotate', async (request, reply) => {
    const accountId = currentAccount(request).id;
    const before = await deps.keys.find(accountId, request.params.id);
    const created = await deps.keys.rotate(accountId, request.params.id);
    await deps.audit.record({
      organisationId: created.record.accountId,
      actor: personActor(request),
      ip: request.ip,
      action: 'key.rotate',
      target: { type: 'key', id: request.params.id },
      before: before === null ? null : keySnapshot(before),
      after: { replacedBy: created.record.id, ...keySnapshot(created.record) },
    });
    return reply
      .code(201)
      .send({ key: present(created.record, deps.now()), secret: created.secret, revokedKeyId: request.params.id });
  });
}
