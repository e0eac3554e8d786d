import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareCatalog } from './catalog-runtime.js';
import { ModelCatalog } from './catalog/model-catalog.js';
import { loadConfig } from './config/load-config.js';
import { createProviders } from './providers/create-providers.js';
import { DeploymentBuilder } from './providers/deployment-providers.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** The catalog part of `yaml`, checked as a start or a reload checks it; returns the catalog it would serve. */
function prepared(yaml: string): ModelCatalog {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-catalog-'));
  directories.push(directory);
  writeFileSync(join(directory, 'tollgate.yaml'), yaml);
  const config = loadConfig({ TOLLGATE_DEMO: '1' }, directory);
  const catalog = new ModelCatalog();
  const providers = createProviders(config, {
    anthropic: 'http://127.0.0.1:9',
    openai: 'http://127.0.0.1:9/v1',
    gemini: 'http://127.0.0.1:9',
    deepseek: 'http://127.0.0.1:9',
  });
  prepareCatalog(config, { catalog, providers, deployments: new DeploymentBuilder(1_000) }).commit();
  return catalog;
}

describe('the operator catalog, checked before it applies', () => {
  it('adds, retires and aliases models', () => {
    const catalog = prepared(`
models:
  delta-v5: { family: delta, contextWindow: 128000, maxOutputTokens: 8192, prices: { input: "0.2", output: "0.4" } }
  delta-r1: { retired: true, replacement: delta-v5 }
aliases:
  deepseek-chat: delta-v5
`);
    expect(catalog.resolve('deepseek-chat')).toMatchObject({
      id: 'delta-v5',
      vendor: 'deepseek',
      upstreamModel: 'delta-v5',
    });
    expect(catalog.resolve('delta-v5').prices).toMatchObject({ input: 200n, output: 400n, cacheRead: 200n });
    expect(() => catalog.resolve('delta-r1')).toThrow(/retired\. Use 'delta-v5' instead/);
    expect(catalog.find('delta-r1')?.prices.input).toBe(550n);
  });

  it.each([
    ['an unknown family', 'models:\n  x-1: { family: epsilon }', /models\.x-1\.family/],
    [
      'a price that is not a decimal',
      'models:\n  beta-5.4: { prices: { output: "1e3" } }',
      /models\.beta-5\.4\.prices\.output/,
    ],
    [
      'an addition without prices',
      'models:\n  x-1: { family: beta, contextWindow: 10, maxOutputTokens: 5 }',
      /models\.x-1\.prices\.input: required/,
    ],
    ['an alias shadowing a model', 'aliases:\n  beta-5.4: beta-5.5', /aliases\.beta-5\.4: shadows the model/],
    ['an alias to nothing', 'aliases:\n  smart: beta-9', /aliases\.smart: 'beta-9' is not a model id/],
    [
      'a chain with a cycle',
      'models:\n  beta-5.4: { fallbacks: [beta-5.5, beta-5.4] }',
      /models\.beta-5\.4\.fallbacks: 'beta-5\.4' leads back to 'beta-5\.4' \(a cycle\)/,
    ],
    ['a chain naming a model twice', 'models:\n  beta-5.4: { fallbacks: [o3, o3] }', /listed twice/],
    [
      'a chain with an unknown model',
      'models:\n  beta-5.4: { fallbacks: [beta-9] }',
      /models\.beta-5\.4\.fallbacks: 'beta-9' is not a model/,
    ],
    [
      'a deployment without credentials',
      'deployments:\n  east: { family: alpha, baseUrl: "http://127.0.0.1:1" }',
      /deployments\.east\.apiKey: needs credentials/,
    ],
    [
      'an unknown deployment',
      'models:\n  beta-5.4: { deployments: [west] }',
      /models\.beta-5\.4\.deployments: 'west' is not a deployment/,
    ],
    [
      'a deployment of another family',
      'deployments:\n  east: { family: alpha, baseUrl: "http://127.0.0.1:1", apiKey: k }\nmodels:\n  beta-5.4: { deployments: [east] }',
      /'east' serves the alpha family, not beta/,
    ],
    [
      'a retired model replaced by nothing',
      'models:\n  o3: { retired: true, replacement: o9 }',
      /models\.o3\.replacement/,
    ],
  ])('refuses %s, naming the entry', (_name, yaml, message) => {
    expect(() => prepared(yaml)).toThrow(message);
  });
});
