/**
 * Projects on both databases: create, list, get, rename, allowlist and archive; names unique among live projects
 * only (under concurrency too); the default project cannot be archived; archived projects change no more; and the
 * key lookup reads its project's allowlist and archive time.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import { defaultProjectId } from './project-types.js';
import type { Storage } from './types.js';

const NOW = 1_800_000_000_000;

describe.each([sqliteBackend, postgresBackend])('projects on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function organisation(): Promise<string> {
    const id = `acct-${randomUUID()}`;
    await storage.accounts.create({
      id,
      email: `${id}@example.com`,
      passwordHash: 'x',
      role: 'user',
      tier: 'standard',
      createdAt: NOW,
    });
    return id;
  }

  // Each a millisecond after the last: the list's order (oldest first) is then known; ties would sort by random id.
  let made = 0;
  function project(organisationId: string, name: string, models: string[] | null = null) {
    return { id: `proj_${randomUUID().replaceAll('-', '')}`, organisationId, name, models, createdAt: NOW + ++made };
  }

  it('creates projects beside the default one and lists the default first', async () => {
    const org = await organisation();
    const team = project(org, 'Team', ['alpha', 'beta-large']);
    expect(await storage.projects.create(team)).toEqual({ ...team, archivedAt: null });
    expect(await storage.projects.list(org)).toEqual([
      {
        id: defaultProjectId(org),
        organisationId: org,
        name: 'Default',
        models: null,
        createdAt: NOW,
        archivedAt: null,
      },
      { ...team, archivedAt: null },
    ]);
    expect(await storage.projects.get(org, team.id)).toEqual({ ...team, archivedAt: null });
    // Another organisation's project is not found through this one.
    expect(await storage.projects.get(await organisation(), team.id)).toBeNull();
  });

  it('refuses a name a live project of the organisation has, and frees it when that one is archived', async () => {
    const org = await organisation();
    const first = project(org, 'Web');
    await storage.projects.create(first);
    expect(await storage.projects.create(project(org, 'Web'))).toBe('name_taken');
    expect(await storage.projects.create(project(await organisation(), 'Web'))).not.toBe('name_taken');
    expect((await storage.projects.archive(org, first.id, NOW + 5)).kind).toBe('changed');
    const second = project(org, 'Web');
    expect(await storage.projects.create(second)).toMatchObject({ name: 'Web' });
    expect((await storage.projects.list(org)).map((p) => p.id)).toEqual([defaultProjectId(org), second.id]);
    expect((await storage.projects.list(org, { includeArchived: true })).map((p) => p.id)).toEqual([
      defaultProjectId(org),
      first.id,
      second.id,
    ]);
  });

  it('creates exactly one of two projects of one name made at once', async () => {
    const org = await organisation();
    const results = await Promise.all([
      storage.projects.create(project(org, 'Race')),
      storage.projects.create(project(org, 'Race')),
    ]);
    expect(results.filter((result) => result === 'name_taken')).toHaveLength(1);
    expect((await storage.projects.list(org)).filter((p) => p.name === 'Race')).toHaveLength(1);
  });

  it('renames and sets the allowlist with the before and after, refusing a taken name', async () => {
    const org = await organisation();
    const a = project(org, 'A');
    await storage.projects.create(a);
    await storage.projects.create(project(org, 'B'));
    const renamed = await storage.projects.rename(org, a.id, 'C');
    expect(renamed).toMatchObject({ kind: 'changed', before: { name: 'A' }, after: { name: 'C' } });
    expect(await storage.projects.rename(org, a.id, 'B')).toEqual({ kind: 'name_taken' });
    expect((await storage.projects.get(org, a.id))?.name).toBe('C');
    const models = await storage.projects.setModels(org, a.id, ['alpha-sonnet-5', 'beta']);
    expect(models).toMatchObject({
      kind: 'changed',
      before: { models: null },
      after: { models: ['alpha-sonnet-5', 'beta'] },
    });
    expect(await storage.projects.setModels(org, a.id, null)).toMatchObject({ after: { models: null } });
    expect(await storage.projects.rename(org, 'proj_missing', 'X')).toEqual({ kind: 'not_found' });
    expect(await storage.projects.rename(await organisation(), a.id, 'X')).toEqual({ kind: 'not_found' });
  });

  it('archives once, never the default project, and changes an archived project no more', async () => {
    const org = await organisation();
    const p = project(org, 'Old');
    await storage.projects.create(p);
    expect(await storage.projects.archive(org, defaultProjectId(org), NOW)).toEqual({ kind: 'default_project' });
    const both = await Promise.all([
      storage.projects.archive(org, p.id, NOW + 10),
      storage.projects.archive(org, p.id, NOW + 11),
    ]);
    expect(both.map((result) => result.kind).sort()).toEqual(['archived', 'changed']);
    expect(await storage.projects.rename(org, p.id, 'New')).toEqual({ kind: 'archived' });
    expect(await storage.projects.setModels(org, p.id, ['alpha'])).toEqual({ kind: 'archived' });
    expect((await storage.projects.get(org, p.id))?.name).toBe('Old');
  });

  it("reads a key's project with the key: its allowlist and its archive time", async () => {
    const org = await organisation();
    const p = project(org, 'Keys', ['alpha']);
    await storage.projects.create(p);
    const keyHash = randomUUID().replaceAll('-', '').padEnd(64, '0');
    const created = await storage.apiKeys.create({
      id: `key_${randomUUID()}`,
      accountId: org,
      projectId: p.id,
      name: 'k',
      keyHash,
      hint: 'h',
      createdAt: NOW,
      expiresAt: null,
    });
    expect(created.projectId).toBe(p.id);
    expect((await storage.apiKeys.findByHashWithOrganisation(keyHash))?.project).toEqual({
      id: p.id,
      models: ['alpha'],
      archivedAt: null,
    });
    await storage.projects.archive(org, p.id, NOW + 20);
    expect((await storage.apiKeys.findByHashWithOrganisation(keyHash))?.project.archivedAt).toBe(NOW + 20);
  });
});
