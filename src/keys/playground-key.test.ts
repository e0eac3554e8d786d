import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import { GatewayError } from '../canonical/errors.js';
import type { Storage } from '../storage/types.js';
import { hashApiKey } from './key-format.js';
import { KeyService } from './key-service.js';
import { isPlaygroundKeyId, playgroundKeyId } from './playground-key.js';

const ACCOUNT = 'acct_playground';

describe.each([sqliteBackend, postgresBackend])('the playground key on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let keys: KeyService;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    await storage.accounts.create({
      id: ACCOUNT,
      email: 'playground@example.com',
      passwordHash: 'x',
      role: 'user',
      tier: 'standard',
      createdAt: 0,
    });
    keys = new KeyService(storage.apiKeys, () => 1_000);
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('is made once per account, even by first requests at once', async () => {
    const made = await Promise.all([
      keys.playgroundKey(ACCOUNT),
      keys.playgroundKey(ACCOUNT),
      keys.playgroundKey(ACCOUNT),
    ]);
    expect(new Set(made.map((key) => key.id))).toEqual(new Set([playgroundKeyId(ACCOUNT)]));
    expect((await keys.list(ACCOUNT)).filter((key) => isPlaygroundKeyId(key.id))).toHaveLength(1);
    expect(made[0]).toMatchObject({ name: 'Playground', hint: 'no secret', revokedAt: null, expiresAt: null });
  });

  it('has no secret any presented key can match', async () => {
    const key = await keys.playgroundKey(ACCOUNT);
    // A SHA-256 digest is 64 hex characters; the stored value is not one, so no lookup by a presented key's hash finds it.
    expect(key.keyHash).not.toMatch(/^[0-9a-f]{64}$/);
    expect(await storage.apiKeys.findByHashWithOrganisation(hashApiKey(key.keyHash))).toBeNull();
    await expect(keys.authenticate(key.keyHash)).rejects.toThrow(GatewayError);
  });

  it('cannot be revoked or rotated, but its limits can be narrowed', async () => {
    const id = playgroundKeyId(ACCOUNT);
    await expect(keys.revoke(ACCOUNT, id)).rejects.toThrow('The playground key cannot be revoked');
    await expect(keys.rotate(ACCOUNT, id)).rejects.toThrow('The playground key cannot be rotated');
    const narrowed = await keys.update(ACCOUNT, id, { models: ['beta-5.4'] });
    expect(narrowed.permissions.models).toEqual(['beta-5.4']);
    expect((await keys.playgroundKey(ACCOUNT)).permissions.models).toEqual(['beta-5.4']);
  });
});
