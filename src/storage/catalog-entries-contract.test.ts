/**
 * The operator's catalog edits (0024-catalog-entries) against SQLite and the real PostgreSQL: revisions numbered
 * without gaps, a change checked against an old revision refused with nothing written, two storage handles racing
 * for the same revision (one wins), and the history of who changed what.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import { CatalogRevisionConflict } from './catalog-entry-types.js';
import type { Storage } from './types.js';

describe.each([sqliteBackend, postgresBackend])('catalog entries storage: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let other: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    other = await database.open();
  });

  afterAll(async () => {
    await other?.close();
    await storage?.close();
    await database?.drop();
  });

  it('starts at revision 0 and numbers each change, keeping the entry and its history', async () => {
    expect(await storage.catalog.revision()).toBe(0);
    expect(await storage.catalog.snapshot()).toEqual({ revision: 0, entries: [] });
    const model = { family: 'alpha', prices: { input: '2.20', output: '11.70' } };
    expect(
      await storage.catalog.write(0, {
        kind: 'model',
        id: 'alpha-sonnet-6',
        action: 'put',
        document: model,
        changedBy: 'ops@example.com',
        at: 1000,
      }),
    ).toBe(1);
    expect(
      await storage.catalog.write(1, {
        kind: 'alias',
        id: 'sonnet-latest',
        action: 'put',
        document: { model: 'alpha-sonnet-6' },
        changedBy: 'ops@example.com',
        at: 2000,
      }),
    ).toBe(2);
    const retired = { ...model, retired: true, replacement: 'alpha-sonnet-5' };
    await storage.catalog.write(2, {
      kind: 'model',
      id: 'alpha-sonnet-6',
      action: 'retire',
      document: retired,
      changedBy: 'cli',
      at: 3000,
    });
    await storage.catalog.write(3, {
      kind: 'alias',
      id: 'sonnet-latest',
      action: 'delete',
      document: null,
      changedBy: 'cli',
      at: 4000,
    });
    expect(await other.catalog.revision()).toBe(4);
    expect(await other.catalog.snapshot()).toEqual({
      revision: 4,
      entries: [
        { kind: 'model', id: 'alpha-sonnet-6', document: retired, revision: 3, updatedBy: 'cli', updatedAt: 3000 },
      ],
    });
    const history = await storage.catalog.history(10);
    expect(history.map((row) => [row.revision, row.action, row.entryId])).toEqual([
      [4, 'delete', 'sonnet-latest'],
      [3, 'retire', 'alpha-sonnet-6'],
      [2, 'put', 'sonnet-latest'],
      [1, 'put', 'alpha-sonnet-6'],
    ]);
    expect(history[1]).toMatchObject({ before: model, after: retired, changedBy: 'cli', changedAt: 3000 });
    expect(history[0]).toMatchObject({ before: { model: 'alpha-sonnet-6' }, after: null });
  });

  it('refuses a change checked against an old revision, writing nothing', async () => {
    const before = await storage.catalog.snapshot();
    await expect(
      storage.catalog.write(before.revision - 1, {
        kind: 'deployment',
        id: 'late',
        action: 'put',
        document: { family: 'alpha' },
        changedBy: 'ops',
        at: 5000,
      }),
    ).rejects.toBeInstanceOf(CatalogRevisionConflict);
    expect(await storage.catalog.snapshot()).toEqual(before);
  });

  it('lets exactly one of two changes checked against the same revision land', async () => {
    const revision = await storage.catalog.revision();
    const change = (id: string, handle: Storage) =>
      handle.catalog.write(revision, {
        kind: 'alias',
        id,
        action: 'put',
        document: { model: 'alpha-sonnet-5' },
        changedBy: id,
        at: 6000,
      });
    // Two processes on PostgreSQL; on SQLite one handle (a second in the same process would wait for the file's
    // lock on the event loop the first needs to finish), its writes queued on the one connection.
    const second = backend.name === 'sqlite' ? storage : other;
    const results = await Promise.allSettled([change('racer-a', storage), change('racer-b', second)]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((result) => result.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(CatalogRevisionConflict);
    const { entries } = await storage.catalog.snapshot();
    expect(entries.filter((entry) => entry.id.startsWith('racer-'))).toHaveLength(1);
    expect(await storage.catalog.revision()).toBe(revision + 1);
  });
});
