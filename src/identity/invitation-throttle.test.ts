/**
 * The invitation throttle on both databases: per inviter and per organisation, in one rolling window, and a refused
 * invitation records nothing (so it does not extend its own wait).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import type { Storage } from '../storage/types.js';
import { InvitationThrottle, TooManyMailRequestsError } from './mail-throttle.js';

describe.each([sqliteBackend, postgresBackend])('invitation throttle on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let now = 1_800_000_000_000;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('limits one inviter across organisations, and one organisation across inviters', async () => {
    const throttle = new InvitationThrottle(
      storage.loginFailures,
      { maxPerInviter: 3, maxPerOrganisation: 4 },
      () => now,
    );
    for (let sent = 0; sent < 3; sent++) await throttle.admit('alice', `org-${sent}`);
    const refused = await throttle.admit('alice', 'org-9').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TooManyMailRequestsError);
    expect(refused).toMatchObject({ status: 429, code: 'too_many_attempts' });
    expect((refused as TooManyMailRequestsError).retryAfterSeconds).toBe(15 * 60);

    // Another inviter of one organisation: the organisation's own limit.
    for (let sent = 0; sent < 4; sent++) await throttle.admit(`member-${sent}`, 'team');
    await expect(throttle.admit('member-9', 'team')).rejects.toBeInstanceOf(TooManyMailRequestsError);
    // The refusal recorded nothing: a new inviter of another organisation is not held back by it.
    await throttle.admit('member-9', 'other-team');

    // The window rolls on.
    now += 15 * 60_000 + 1;
    await throttle.admit('alice', 'org-9');
    await throttle.admit('member-10', 'team');
  });
});
