/**
 * Migration 0020-projects on both backends, over data the schema before it wrote: every organisation gets a
 * "Default" project with the id derived from its own, and every key (revoked ones too) goes into its organisation's;
 * keys authenticate as before. After it, a new organisation gets its default project with it.
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

const AT = 20_000 * 86_400_000;
const BEFORE = migrationsBefore('0020-projects');

async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, created_at)
            values ('a1', 'a@x.io', 'a@x.io', 'x', 'user', ${AT})`.execute(db);
  await sql`insert into organisations (id, name, created_at) values ('a1', 'Personal', ${AT}),
            ('org_team', 'Team', ${AT + 5})`.execute(db);
  await sql`insert into organisation_members (organisation_id, account_id, role, created_at)
            values ('a1', 'a1', 'owner', ${AT}), ('org_team', 'a1', 'owner', ${AT + 5})`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at, models, created_by)
            values ('k1', 'a1', 'one', 'hash1', 'h', ${AT}, 'alpha', 'a1'),
                   ('k2', 'org_team', 'two', 'hash2', 'h', ${AT + 6}, null, 'a1')`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at, revoked_at)
            values ('k3', 'org_team', 'old', 'hash3', 'h', ${AT + 7}, ${AT + 8})`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0020-projects: $name', ({ create }) => {
  it("gives every organisation a default project and puts every key in its organisation's", async () => {
    const database = await databaseBefore(create, '0020-projects', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        expect(await storage.migrate()).toEqual(Object.keys(allMigrations).filter((name) => !BEFORE.includes(name)));
        expect(await storage.projects.list('a1')).toEqual([
          {
            id: 'proj_default_a1',
            organisationId: 'a1',
            name: 'Default',
            models: null,
            createdAt: AT,
            archivedAt: null,
          },
        ]);
        expect(await storage.projects.list('org_team')).toEqual([
          {
            id: 'proj_default_org_team',
            organisationId: 'org_team',
            name: 'Default',
            models: null,
            createdAt: AT + 5,
            archivedAt: null,
          },
        ]);
        expect((await storage.apiKeys.listByAccount('a1')).map((key) => [key.id, key.projectId])).toEqual([
          ['k1', 'proj_default_a1'],
        ]);
        expect((await storage.apiKeys.listByAccount('org_team')).map((key) => [key.id, key.projectId])).toEqual([
          ['k3', 'proj_default_org_team'],
          ['k2', 'proj_default_org_team'],
        ]);
        // A key's own allowlist is untouched; its project allows every model and is live.
        const found = await storage.apiKeys.findByHashWithOrganisation('hash1');
        expect(found?.key.permissions.models).toEqual(['alpha']);
        expect(found?.project).toEqual({ id: 'proj_default_a1', models: null, archivedAt: null });

        // After it: a new organisation comes with its default project, and a key made without one goes there.
        await storage.organisations.create(
          { id: 'org_new', name: 'New', billingName: null, billingAddress: null, createdAt: AT + 30 },
          'a1',
        );
        expect((await storage.projects.list('org_new')).map((project) => project.id)).toEqual(['proj_default_org_new']);
        await storage.apiKeys.create({
          id: 'k4',
          accountId: 'org_new',
          name: 'new',
          keyHash: 'hash4',
          hint: 'h',
          createdAt: AT + 31,
          expiresAt: null,
        });
        expect((await storage.apiKeys.findByHashWithOrganisation('hash4'))?.project.id).toBe('proj_default_org_new');
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
