import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { isReservedPath, registerWebApp } from './web-app.js';

const INDEX = '<!doctype html><div id="root"></div>';
let app: FastifyInstance | undefined;
let directory: string | undefined;

/** A built SPA in a temp dir: index.html, a hashed asset, a favicon; plus a secret file beside it. */
function fakeBuild(): string {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-web-'));
  const root = join(directory, 'web');
  mkdirSync(join(root, 'assets'), { recursive: true });
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'index-abc123.js'), 'console.log(1)');
  writeFileSync(join(root, 'favicon.svg'), '<svg/>');
  writeFileSync(join(directory, 'secret.txt'), 'do not serve');
  return root;
}

async function appWith(root: string): Promise<FastifyInstance> {
  const instance = Fastify();
  // The gateway's own JSON 404 (app.ts), which the SPA must leave in place for the API namespaces.
  instance.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { code: 'not_found', path: request.url } }),
  );
  instance.get('/v1/models', async () => ({ data: [] }));
  registerWebApp(instance, { root });
  await instance.ready();
  app = instance;
  return instance;
}

afterEach(async () => {
  await app?.close();
  app = undefined;
  if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  directory = undefined;
});

describe('registerWebApp', () => {
  it('serves index.html at / and for client-side routes, with no-cache and a same-origin CSP', async () => {
    const instance = await appWith(fakeBuild());
    for (const url of ['/', '/keys', '/usage?days=7', '/billing/']) {
      const reply = await instance.inject({ method: 'GET', url });
      expect(reply.statusCode, url).toBe(200);
      expect(reply.body, url).toBe(INDEX);
      expect(reply.headers['cache-control'], url).toBe('no-cache');
      expect(String(reply.headers['content-security-policy']), url).toContain("script-src 'self'");
    }
  });

  it('serves index.html to page loads only: an API client with a wrong base URL gets the JSON 404', async () => {
    const instance = await appWith(fakeBuild());
    const page = await instance.inject({
      method: 'GET',
      url: '/keys',
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toBe(INDEX);
    for (const accept of ['application/json', '*/*']) {
      // @google/genai, the OpenAI SDK and curl pointed at the root instead of /v1beta or /v1.
      const reply = await instance.inject({ method: 'GET', url: '/models', headers: { accept } });
      expect(reply.statusCode, accept).toBe(404);
      expect(reply.json(), accept).toMatchObject({ error: { code: 'not_found' } });
      // The SPA's own pages are pages to any client.
      for (const url of ['/', '/usage', '/billing/', '/projects', '/limits', '/members', '/audit', '/playground'])
        expect((await instance.inject({ method: 'GET', url, headers: { accept } })).body, url).toBe(INDEX);
    }
    for (const url of ['/v1beta/models', '/v1beta/anything']) {
      const reply = await instance.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expect(reply.statusCode, url).toBe(404);
      expect(reply.json(), url).toMatchObject({ error: { code: 'not_found' } });
    }
    await instance.close();
    const notBuilt = await appWith(join(tmpdir(), 'tollgate-no-such-build-dir'));
    expect(
      (await notBuilt.inject({ method: 'GET', url: '/models', headers: { accept: 'application/json' } })).statusCode,
    ).toBe(404);
  });

  it('serves build files, hashed assets as immutable', async () => {
    const instance = await appWith(fakeBuild());
    const asset = await instance.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.body).toBe('console.log(1)');
    expect(asset.headers['cache-control']).toContain('immutable');
    const icon = await instance.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['cache-control']).not.toContain('immutable');
  });

  it('keeps JSON 404s for the API namespaces, probes and missing assets', async () => {
    const instance = await appWith(fakeBuild());
    for (const url of [
      '/v1/nope',
      '/v1',
      '/api/keys/x',
      '/healthz/x',
      '/metrics',
      '/readyz',
      '/assets/gone-999.js',
      '/robots.txt',
    ]) {
      const reply = await instance.inject({ method: 'GET', url });
      expect(reply.statusCode, url).toBe(404);
      expect(reply.json(), url).toMatchObject({ error: { code: 'not_found' } });
    }
    expect((await instance.inject({ method: 'GET', url: '/v1/models' })).json()).toEqual({ data: [] });
    expect((await instance.inject({ method: 'POST', url: '/keys' })).statusCode).toBe(404);
  });

  it('never serves a file outside the build directory', async () => {
    const instance = await appWith(fakeBuild());
    for (const url of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/%2e%2e%2fsecret.txt',
    ]) {
      const reply = await instance.inject({ method: 'GET', url });
      expect(reply.body, url).not.toContain('do not serve');
    }
  });

  it('answers a short "not built" page when the build output is missing, without crashing', async () => {
    const instance = await appWith(join(tmpdir(), 'tollgate-no-such-build-dir'));
    const reply = await instance.inject({ method: 'GET', url: '/keys' });
    expect(reply.statusCode).toBe(503);
    expect(reply.body).toContain('The dashboard was not built');
    expect((await instance.inject({ method: 'GET', url: '/v1/nope' })).statusCode).toBe(404);
  });
});

describe('isReservedPath', () => {
  it('matches the namespaces and their sub-paths only', () => {
    expect(isReservedPath('/v1')).toBe(true);
    expect(isReservedPath('/v1/chat/completions')).toBe(true);
    expect(isReservedPath('/api/session')).toBe(true);
    expect(isReservedPath('/v1beta')).toBe(true);
    expect(isReservedPath('/v1beta/models')).toBe(true);
    expect(isReservedPath('/v1betas')).toBe(false);
    expect(isReservedPath('/apiary')).toBe(false);
    expect(isReservedPath('/usage')).toBe(false);
  });
});
