import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../canonical/errors.js';
import type { KeyService } from '../keys/key-service.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import type { ApiKeyRecord } from '../storage/types.js';
import { keyNameSchema } from './text-fields.js';

const createKeyBody = z
  .object({
    name: keyNameSchema,
    /** Unix seconds. */
    expires_at: z.number().int().positive().nullish(),
    expires_in_days: z.number().int().min(1).max(3650).nullish(),
  })
  .strict();

const MS_PER_DAY = 86_400_000;

/** Key management over HTTP, authenticated by an API key of the same account (spec 2.1: full permissions). */
export function registerKeysApi(app: FastifyInstance, keys: KeyService, now: () => number = Date.now): void {
  app.get('/v1/keys', async (request) => {
    const records = await keys.list(request.auth!.account.id);
    return { object: 'list', data: records.map((record) => presentKey(record, now())) };
  });

  app.post('/v1/keys', async (request, reply) => {
    const parsed = createKeyBody.safeParse(request.body ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { name, expires_at: expiresAtSeconds, expires_in_days: expiresInDays } = parsed.data;
    if (expiresAtSeconds != null && expiresInDays != null) {
      throw invalidRequest("Give either 'expires_at' or 'expires_in_days', not both.", 'expires_at');
    }
    let expiresAt: number | null = null;
    if (expiresAtSeconds != null) {
      expiresAt = expiresAtSeconds * 1000;
      if (expiresAt <= now()) throw invalidRequest("'expires_at' must be in the future.", 'expires_at');
    } else if (expiresInDays != null) expiresAt = now() + expiresInDays * MS_PER_DAY;
    const created = await keys.create(request.auth!.account.id, { name, expiresAt });
    return reply.code(201).send({ ...presentKey(created.record, now()), key: created.secret });
  });

  app.delete<{ Params: { id: string } }>('/v1/keys/:id', { config: { acceptsEmptyBody: true } }, async (request) => {
    await keys.revoke(request.auth!.account.id, request.params.id);
    return { id: request.params.id, object: 'api_key', revoked: true };
  });

  app.post<{ Params: { id: string } }>('/v1/keys/:id/rotate', { config: { acceptsEmptyBody: true } }, async (request, reply) => {
    const created = await keys.rotate(request.auth!.account.id, request.params.id);
    return reply.code(201).send({ ...presentKey(created.record, now()), key: created.secret, replaces: request.params.id });
  });
}

export function keyStatus(record: ApiKeyRecord, now: number): 'active' | 'revoked' | 'expired' {
  if (record.revokedAt !== null) return 'revoked';
  if (record.expiresAt !== null && record.expiresAt <= now) return 'expired';
  return 'active';
}

const toSeconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

function presentKey(record: ApiKeyRecord, now: number) {
  return {
    id: record.id,
    object: 'api_key',
    name: record.name,
    hint: record.hint,
    status: keyStatus(record, now),
    created_at: toSeconds(record.createdAt),
    expires_at: toSeconds(record.expiresAt),
    revoked_at: toSeconds(record.revokedAt),
    last_used_at: toSeconds(record.lastUsedAt),
  };
}
