/**
 * Migration 0023-organisation-sign-in-policy on both backends, over rows the schema before it wrote: organisations
 * keep working with no requirement, open sessions read as started with a password alone (so a requirement switched
 * on later asks them to sign in again), and members read as not provisioned by any provider.
 */
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  databaseBefore,
  migrationsBefore,
  rawPostgresDatabase,
  rawSqliteDatabase,
} from '../../test/helpers/migration-databases.js';
import { allMigrations } from './migrations/all-migrations.js';
import { openStorage } from './open-storage.js';

const AT = 1_800_000_000_000;
const BEFORE = migrationsBefore('0023-organisation-sign-in-policy');

async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, created_at)
            values ('a1', 'a@x.io', 'a@x.io', 'x', 'user', ${AT})`.execute(db);
  await sql`insert into organisations (id, name, created_at) values ('a1', 'Personal', ${AT})`.execute(db);
  await sql`insert into organisation_members (organisation_id, account_id, role, created_at)
            values ('a1', 'a1', 'owner', ${AT})`.execute(db);
  await sql`insert into sessions (id_hash, account_id, created_at, last_seen_at, organisation_id)
            values ('s1', 'a1', ${AT}, ${AT}, 'a1')`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0023-organisation-sign-in-policy on $name', ({ create }) => {
  it('leaves old organisations without requirements and old sessions as password sign-ins', async () => {
    const database = await databaseBefore(create, '0023-organisation-sign-in-policy', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        // 0023 and every migration after it (later work adds theirs).
        expect(await storage.migrate()).toEqual(Object.keys(allMigrations).filter((name) => !BEFORE.includes(name)));
        const found = await storage.sessions.findWithAccount('s1');
        expect(found?.session).toMatchObject({ signInMethod: 'password', ssoProvider: null, organisationId: 'a1' });
        expect(found?.membership?.organisation.signInPolicy).toEqual({
          requireSecondFactor: false,
          requiredSsoProviders: [],
        });
        expect((await storage.organisations.members('a1'))[0]).toMatchObject({ role: 'owner', provisionedBy: null });
        // The policy can be set on the old organisation, and is read with the old session.
        await storage.organisations.setSignInPolicy('a1', { requireSecondFactor: true, requiredSsoProviders: [] });
        expect((await storage.sessions.findWithAccount('s1'))?.membership?.organisation.signInPolicy).toEqual({
          requireSecondFactor: true,
          requiredSsoProviders: [],
        });
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
