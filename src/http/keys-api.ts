import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from '../accounts/audit/audit-log.js';
import { keySnapshot } from '../accounts/audit/audit-snapshots.js';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import type { ProjectService } from '../accounts/project-service.js';
import type { KeyService } from '../keys/key-service.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import type { ApiKeyChange, ApiKeyRecord } from '../storage/types.js';
import {
  applyChange,
  assertProjectWithinCaller,
  assertLimitsWithinCaller,
  assertWithinCaller,
  limitsAfter,
  parsePermissionFields,
  permissionFieldShapes,
  presentPermissionFields,
} from './key-permission-fields.js';
import { keyNameSchema } from './text-fields.js';

const createKeyBody = z
  .object({
    name: keyNameSchema,
    /** Unix seconds. */
    expires_at: z.number().int().positive().nullish(),
    expires_in_days: z.number().int().min(1).max(3650).nullish(),
    ...permissionFieldShapes,
  })
  .strict();

/** A key is created in a project and stays there: an update takes no `project_id`. */
const updateKeyBody = createKeyBody.partial();

const createKeyBodyWithProject = createKeyBody.extend({ project_id: z.string().min(1).max(200).nullish() });

const MS_PER_DAY = 86_400_000;

/**
 * Key management over HTTP, authenticated by an API key of the same account with the `keys:manage` scope
 * (listing also with `usage:read`). A key never gives another key more than it has itself
 * (docs/architecture.md#key-scopes-and-limits).
 */
export function registerKeysApi(
  app: FastifyInstance,
  services: { keys: KeyService; projects: ProjectService; audit: AuditLog },
  now: () => number = Date.now,
): void {
  const { keys, projects, audit } = services;
  app.get('/v1/keys', { config: { scope: ['usage:read', 'keys:manage'] } }, async (request) => {
    const records = await keys.list(request.auth!.organisation.id);
    return { object: 'list', data: records.map((record) => presentKey(record, now())) };
  });

  app.post('/v1/keys', { config: { scope: 'keys:manage' } }, async (request, reply) => {
    const parsed = createKeyBodyWithProject.safeParse(request.body ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { name, expires_at: expiresAtSeconds, expires_in_days: expiresInDays } = parsed.data;
    const expiresAt = parseExpiry(expiresAtSeconds, expiresInDays, now()) ?? null;
    const caller = request.auth!.key.permissions;
    // Fields left out are the creator's own: a restricted key creates keys restricted alike.
    const permissionChange = parsePermissionFields(parsed.data);
    const permissions = applyChange(caller, permissionChange);
    assertWithinCaller(permissions, caller);
    // Left out, the creator's limits, all of them; given, within every one of the creator's.
    const callerLimits = request.auth!.key.limits.map(({ period, limitNano }) => ({ period, limitNano }));
    const limits = limitsAfter(permissionChange, callerLimits);
    assertLimitsWithinCaller(limits, callerLimits, permissionChange.limits === undefined ? 'spend_limit' : 'limits');
    // A key made with a key is the organisation's, credited to the person who made the key it was made with.
    const { organisation, key, project } = request.auth!;
    const projectId = await projects.projectForNewKey(
      organisation.id,
      parsed.data.project_id ?? undefined,
      'project_id',
    );
    if (projectId !== project.id)
      assertProjectWithinCaller(await projects.get(organisation.id, projectId), project, 'project_id');
    const created = await keys.create(organisation.id, key.createdBy, {
      name,
      expiresAt,
      permissions,
      projectId,
      limits,
    });
    await audit.record({
      ...auditContext(request),
      action: 'key.create',
      target: { type: 'key', id: created.record.id },
      after: keySnapshot(created.record),
    });
    return reply.code(201).send({ ...presentKey(created.record, now()), key: created.secret });
  });

  app.patch<{ Params: { id: string } }>('/v1/keys/:id', { config: { scope: 'keys:manage' } }, async (request) => {
    const parsed = updateKeyBody.safeParse(request.body ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { name, expires_at: expiresAtSeconds, expires_in_days: expiresInDays } = parsed.data;
    const accountId = request.auth!.organisation.id;
    const existing = await keys.find(accountId, request.params.id);
    if (existing === null || existing.revokedAt !== null)
      throw new GatewayError('not_found', `No active API key with id '${request.params.id}'.`, { param: 'id' });
    const permissionChange = parsePermissionFields(parsed.data);
    // The key as it would be must be within the caller's own: no key raises itself or another above it.
    assertWithinCaller(applyChange(existing.permissions, permissionChange), request.auth!.key.permissions);
    if (permissionChange.limits !== undefined || permissionChange.spendLimit !== undefined)
      assertLimitsWithinCaller(
        limitsAfter(permissionChange, existing.limits),
        request.auth!.key.limits,
        permissionChange.limits === undefined ? 'spend_limit' : 'limits',
      );
    const change: ApiKeyChange = { ...permissionChange };
    if (name !== undefined) change.name = name;
    const expiresAt = parseExpiry(expiresAtSeconds, expiresInDays, now());
    if (expiresAt !== undefined) change.expiresAt = expiresAt;
    const updated = await keys.update(accountId, request.params.id, change);
    await audit.record({
      ...auditContext(request),
      action: 'key.update',
      target: { type: 'key', id: updated.id },
      before: keySnapshot(existing),
      after: keySnapshot(updated),
    });
    return presentKey(updated, now());
  });

  app.delete<{ Params: { id: string } }>(
    '/v1/keys/:id',
    { config: { scope: 'keys:manage', acceptsEmptyBody: true } },
    async (request) => {
      const existing = await keys.find(request.auth!.organisation.id, request.params.id);
      // A key manages only keys within its own permissions: a restricted key cannot revoke the account's stronger keys.
      if (existing !== null && existing.revokedAt === null)
        assertWithinCaller(existing.permissions, request.auth!.key.permissions);
      await keys.revoke(request.auth!.organisation.id, request.params.id);
      const revoked = await keys.find(request.auth!.organisation.id, request.params.id);
      await audit.record({
        ...auditContext(request),
        action: 'key.revoke',
        target: { type: 'key', id: request.params.id },
        before: existing === null ? null : keySnapshot(existing),
        after: revoked === null ? null : keySnapshot(revoked),
      });
      return { id: request.params.id, object: 'api_key', revoked: true };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/keys/:id/rotate',
    { config: { scope: 'keys:manage', acceptsEmptyBody: true } },
    async (request, reply) => {
      const existing = await keys.find(request.auth!.organisation.id, request.params.id);
      // Rotation hands out a new secret with the old key's permissions: only a caller with at least those may.
      if (existing !== null && existing.revokedAt === null)
        assertWithinCaller(existing.permissions, request.auth!.key.permissions);
      const created = await keys.rotate(request.auth!.organisation.id, request.params.id);
      await audit.record({
        ...auditContext(request),
        action: 'key.rotate',
        target: { type: 'key', id: request.params.id },
        before: existing === null ? null : keySnapshot(existing),
        after: { replacedBy: created.record.id, ...keySnapshot(created.record) },
      });
      return reply
        .code(201)
        .send({ ...presentKey(created.record, now()), key: created.secret, replaces: request.params.id });
    },
  );
}

/**
 * Who acts through an API key, for the audit log: the person who created the key (keys made before creators were
 * kept name their personal organisation, which has that person's id), with the key that made the call.
 */
function auditContext(request: FastifyRequest) {
  const { organisation, key } = request.auth!;
  return {
    organisationId: organisation.id,
    actor: { type: 'person' as const, accountId: key.createdBy ?? organisation.id, keyId: key.id },
    ip: request.ip,
  };
}

export function keyStatus(record: ApiKeyRecord, now: number): 'active' | 'revoked' | 'expired' {
  if (record.revokedAt !== null) return 'revoked';
  if (record.expiresAt !== null && record.expiresAt <= now) return 'expired';
  return 'active';
}

const toSeconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

/**
 * The expiry asked for: epoch ms, null when `expires_at` is given as null (never expires), undefined when
 * neither field is given.
 */
function parseExpiry(
  expiresAtSeconds: number | null | undefined,
  expiresInDays: number | null | undefined,
  now: number,
): number | null | undefined {
  if (expiresAtSeconds != null && expiresInDays != null) {
    throw invalidRequest("Give either 'expires_at' or 'expires_in_days', not both.", 'expires_at');
  }
  if (expiresAtSeconds != null) {
    const expiresAt = expiresAtSeconds * 1000;
    if (expiresAt <= now) throw invalidRequest("'expires_at' must be in the future.", 'expires_at');
    return expiresAt;
  }
  if (expiresInDays != null) return now + expiresInDays * MS_PER_DAY;
  return expiresAtSeconds === null || expiresInDays === null ? null : undefined;
}

function presentKey(record: ApiKeyRecord, now: number) {
  return {
    id: record.id,
    object: 'api_key',
    name: record.name,
    hint: record.hint,
    project_id: record.projectId,
    status: keyStatus(record, now),
    created_at: toSeconds(record.createdAt),
    expires_at: toSeconds(record.expiresAt),
    revoked_at: toSeconds(record.revokedAt),
    last_used_at: toSeconds(record.lastUsedAt),
    ...presentPermissionFields(record, now),
  };
}
