import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { offlineCatalogEditor } from './catalog-live.js';
import { CatalogEntryError, withCatalogEntries } from './config/catalog-entries.js';
import { CatalogEntryNotFound } from './config/catalog-editor.js';
import { loadConfig, type Config } from './config/load-config.js';
import { openStorage } from './storage/open-storage.js';
import type { Storage } from './storage/types.js';

const directories: string[] = [];
const storages: Storage[] = [];
afterEach(async () => {
  for (const storage of storages.splice(0)) await storage.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const YAML = `
models:
  alpha-sonnet-5: { prices: { input: "4.00" } }
aliases:
  sonnet-latest: alpha-sonnet-5
`;

function fileConfig(yaml = YAML): Config {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-catalog-live-'));
  directories.push(directory);
  writeFileSync(join(directory, 'tollgate.yaml'), yaml);
  return loadConfig({ TOLLGATE_DEMO: '1' }, directory);
}

async function editorFor(config: Config, env: Record<string, string> = {}) {
  const storage = await openStorage(':memory:');
  storages.push(storage);
  await storage.migrate();
  return { storage, editor: offlineCatalogEditor(config, storage.catalog, env) };
}

async function refusal(change: Promise<unknown>): Promise<CatalogEntryError> {
  const error = await change.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CatalogEntryError);
  return error as CatalogEntryError;
}

describe('stored catalog entries over tollgate.yaml', () => {
  it('replaces the file entry of the same name whole; deleting it brings the file one back', async () => {
    const config = fileConfig();
    const { editor } = await editorFor(config);
    const stored = await editor.put('model', 'alpha-sonnet-5', { prices: { output: '16.00' } }, 'ops');
    const merged = withCatalogEntries(config, stored.entries, {});
    expect(merged.models['alpha-sonnet-5']).toEqual({ prices: { output: '16.00' } });
    expect(config.models['alpha-sonnet-5']).toEqual({ prices: { input: '4.00' } });
    const deleted = await editor.remove('model', 'alpha-sonnet-5', 'ops');
    expect(withCatalogEntries(config, deleted.entries, {}).models['alpha-sonnet-5']).toEqual({
      prices: { input: '4.00' },
    });
    expect(deleted.revision).toBe(2);
  });

  it("reads a deployment's key from the variable it names, never storing it", async () => {
    const config = fileConfig();
    const { editor, storage } = await editorFor(config, { EU_KEY: 'sk-secret-eu' });
    const entry = { family: 'alpha', baseUrl: 'https://eu.example.com', apiKeyEnv: 'EU_KEY' };
    const snapshot = await editor.put('deployment', 'anthropic-eu', entry, 'ops');
    expect(JSON.stringify(await storage.catalog.snapshot())).not.toContain('sk-secret-eu');
    const merged = withCatalogEntries(config, snapshot.entries, { EU_KEY: 'sk-secret-eu' });
    expect(merged.deployments['anthropic-eu']?.credentials.map((credential) => credential.apiKey)).toEqual([
      'sk-secret-eu',
    ]);
    // Another instance without the variable cannot apply it, and says which.
    expect(() => withCatalogEntries(config, snapshot.entries, {})).toThrow(
      /deployments\.anthropic-eu\.apiKeyEnv: the environment variable EU_KEY is not set/,
    );
  });

  it('refuses what the file would refuse, naming the entry and field, and stores nothing', async () => {
    const { editor, storage } = await editorFor(fileConfig());
    const refusals: Array<[Promise<unknown>, string]> = [
      [
        editor.put('model', 'alpha-sonnet-5', { prices: { input: 'free' } }, 'ops'),
        'models.alpha-sonnet-5.prices.input',
      ],
      [editor.put('model', 'Bad Name', {}, 'ops'), 'models.Bad Name'],
      [editor.put('alias', 'alpha-haiku-4-5', { model: 'alpha-sonnet-5' }, 'ops'), 'aliases.alpha-haiku-4-5'],
      [editor.put('alias', 'next', { model: 'no-such-model' }, 'ops'), 'aliases.next'],
      [editor.put('model', 'beta-5.4', { fallbacks: ['beta-5.5', 'beta-5.4'] }, 'ops'), 'models.beta-5.4.fallbacks'],
      [editor.put('model', 'delta-r1', { deployments: ['nowhere'] }, 'ops'), 'models.delta-r1.deployments'],
      [
        editor.put('deployment', 'keyless', { family: 'beta', baseUrl: 'https://x.example.com' }, 'ops'),
        'deployments.keyless.apiKeyEnv',
      ],
      [
        editor.put('deployment', 'raw', { family: 'beta', baseUrl: 'https://x.example.com', apiKey: 'sk' }, 'ops'),
        'deployments.raw',
      ],
      [editor.retire('alpha-opus-4-8', 'no-such-model', 'ops'), 'models.alpha-opus-4-8.replacement'],
    ];
    for (const [change, field] of refusals) expect((await refusal(change)).field).toBe(field);
    await expect(editor.remove('alias', 'sonnet-latest', 'ops')).rejects.toBeInstanceOf(CatalogEntryNotFound);
    expect(await storage.catalog.snapshot()).toEqual({ revision: 0, entries: [] });
  });

  it('retires a model keeping its entry, and never deletes a model only stored here', async () => {
    const { editor } = await editorFor(fileConfig());
    const model = { family: 'delta', contextWindow: 64000, maxOutputTokens: 4096, prices: { input: '1', output: '2' } };
    await editor.put('model', 'delta-v5', model, 'ops');
    const retired = await editor.retire('delta-v5', 'delta-v4-flash', 'ops');
    expect(retired.entries[0]?.document).toEqual({ ...model, retired: true, replacement: 'delta-v4-flash' });
    expect((await refusal(editor.remove('model', 'delta-v5', 'ops'))).message).toMatch(/retired, not deleted/);
    // A chain is cleared as an edit of its model, from the file's entry when none is stored.
    await editor.put('model', 'beta-5.4', { fallbacks: ['beta-5.5', 'delta-v4-flash'] }, 'ops');
    const cleared = await editor.removeChain('model', 'beta-5.4', 'ops');
    expect(cleared.entries.find((entry) => entry.id === 'beta-5.4')?.document).toEqual({});
    const history = await editor.history(5);
    expect(history.map((change) => change.action)).toEqual(['put', 'put', 'retire', 'put']);
  });
});
