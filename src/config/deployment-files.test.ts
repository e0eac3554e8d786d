import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from './load-config.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** `${NAME:-default}` as compose resolves it, with nothing set in the environment. */
function resolveCompose(value: string): string {
  return value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
}

describe('deployment files', () => {
  const compose = parseYaml(readFileSync(`${root}compose.yaml`, 'utf8')) as {
    services: Record<string, { environment?: Record<string, string>; build?: string }>;
  };

  it('every gateway service in compose.yaml passes the gateway own config validation, on PostgreSQL and Redis', () => {
    const gateways = Object.entries(compose.services).filter(([, service]) => service.build === '.');
    expect(gateways.map(([name]) => name)).toEqual(['gateway-1', 'gateway-2']);
    for (const [, service] of gateways) {
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([name, value]) => [name, resolveCompose(String(value))]),
      );
      const config = loadConfig(env, root + 'deploy');
      expect(config.databaseUrl).toMatch(/^postgres:\/\//);
      expect(config.redisUrl).toBe('redis://redis:6379');
      expect(config.port).toBe(8080);
      expect(config.demoMode).toBe(true); // no vendor keys in the test environment
      // The volume the Dockerfile gives its `node` user: the start-up check refuses a journal it cannot write.
      expect(config.settlementJournalDir).toBe('/data/settlement-journal');
    }
  });

  it("the Dockerfile's runtime defaults pass validation too", () => {
    const dockerfile = readFileSync(`${root}Dockerfile`, 'utf8');
    const envLine = dockerfile
      .split('\n')
      .filter((line) => line.startsWith('ENV '))
      .at(-1)!;
    const env = Object.fromEntries([...envLine.matchAll(/(\w+)=(\S+)/g)].map((match) => [match[1]!, match[2]!]));
    const config = loadConfig(env, root + 'deploy');
    expect(config.databaseUrl).toBe('sqlite:/data/tollgate.db');
    expect(config.settlementJournalDir).toBe('/data/settlement-journal');
    expect(dockerfile).toMatch(/^RUN mkdir -p \/data && chown node:node \/data$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
  });

  it('npm start, the tollgate bin, the Docker image and the end-to-end tests all run one file', () => {
    // The tests start dist/src/cli.js (test/helpers/cli-path.ts): a second artifact would go untested.
    const shipped = 'dist/src/cli.js';
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
      bin: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(pkg.bin).toEqual({ tollgate: shipped });
    expect(pkg.scripts.start).toMatch(new RegExp(`&& node ${shipped} serve$`));
    expect(pkg.scripts.tollgate).toMatch(new RegExp(`&& node ${shipped}$`));
    const dockerfile = readFileSync(`${root}Dockerfile`, 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^CMD \\["node", "${shipped}", "serve"\\]$`, 'm'));
    expect(readFileSync(`${root}test/helpers/cli-path.ts`, 'utf8')).toContain(`'../../${shipped}'`);
  });
});
