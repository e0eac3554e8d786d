import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './load-config.js';

const directories: string[] = [];
function emptyDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('loadConfig', () => {
  it('defaults to port 8080, SQLite under ./data and demo mode without vendor settings', () => {
    const config = loadConfig({}, emptyDirectory());
    expect(config).toMatchObject({ port: 8080, host: '0.0.0.0', databaseUrl: 'sqlite:./data/tollgate.db', demoMode: true });
    expect(config.vendors.openai).toEqual({ apiKey: undefined, baseUrl: 'https://api.openai.com/v1', configured: false });
    expect(config.vendors.anthropic.baseUrl).toBe('https://api.anthropic.com');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads vendor keys and base URLs from the environment; any configured vendor ends demo mode', () => {
    const config = loadConfig(
      { OPENAI_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9999/deepseek/', PORT: '9000' },
      emptyDirectory(),
    );
    expect(config.demoMode).toBe(false);
    expect(config.port).toBe(9000);
    expect(config.vendors.openai).toMatchObject({ apiKey: 'sk-test', configured: true });
    expect(config.vendors.deepseek).toMatchObject({ baseUrl: 'http://127.0.0.1:9999/deepseek', configured: true });
    expect(config.vendors.gemini.configured).toBe(false);
  });

  it('TOLLGATE_DEMO forces demo mode even with keys', () => {
    expect(loadConfig({ OPENAI_API_KEY: 'x', TOLLGATE_DEMO: 'true' }, emptyDirectory()).demoMode).toBe(true);
  });

  it('merges tollgate.yaml under the environment', () => {
    const directory = emptyDirectory();
    writeFileSync(
      join(directory, 'tollgate.yaml'),
      'port: 7000\nhost: 127.0.0.1\nvendors:\n  anthropic:\n    apiKey: from-file\nmodels:\n  beta-5.4:\n    upstreamModel: gpt-5.4-pinned\n',
    );
    const config = loadConfig({ PORT: '7001' }, directory);
    expect(config.port).toBe(7001);
    expect(config.host).toBe('127.0.0.1');
    expect(config.vendors.anthropic).toMatchObject({ apiKey: 'from-file', configured: true });
    expect(config.models['beta-5.4']).toEqual({ upstreamModel: 'gpt-5.4-pinned' });
  });

  it('reports every invalid setting by its environment name', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', OPENAI_BASE_URL: 'ftp://example.com', LOG_LEVEL: 'loud' }, emptyDirectory());
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/OPENAI_BASE_URL/);
    expect(message).toMatch(/LOG_LEVEL/);
  });

  it('rejects unknown settings in tollgate.yaml and a missing TOLLGATE_CONFIG file', () => {
    const directory = emptyDirectory();
    writeFileSync(join(directory, 'tollgate.yaml'), 'prot: 8080\n');
    expect(() => loadConfig({}, directory)).toThrow(/prot/);
    expect(() => loadConfig({ TOLLGATE_CONFIG: join(directory, 'missing.yaml') }, directory)).toThrow(/does not exist/);
  });
});
