import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGatewayProcess } from '../helpers/gateway-process.js';

/**
 * What a started gateway carries in its heap: the libraries only some deployments or some requests use are
 * loaded by their first use, not at start-up. The built CLI runs as a process with a module hook (Node's
 * `--import`) that writes down every file it loads; the gateway serves a health check and is read at rest.
 */
const LOADED_ON_FIRST_USE = [
  '@simplewebauthn/server', // the first passkey ceremony
  'openid-client', // the first SSO sign-in
  'otpauth', // the first authenticator-app enrolment or code
  'qrcode', // the same enrolment's QR code
  'nodemailer', // the first mail
  'stripe', // the first Stripe top-up
  'gpt-tokenizer', // the first exact token count
  '@opentelemetry/sdk-trace', // OTEL_EXPORTER_OTLP_ENDPOINT set
  'ioredis', // REDIS_URL set
  'pg', // a PostgreSQL DATABASE_URL
];

let directory: string;
let loaded: Set<string>;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-startup-modules-'));
  const log = join(directory, 'loaded.txt');
  const hook = join(directory, 'record-loads.mjs');
  writeFileSync(
    hook,
    `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({
  load(url, context, next) {
    appendFileSync(${JSON.stringify(log)}, url + '\\n');
    return next(url, context);
  },
});
`,
  );
  // Two vendor families point at a closed loopback port, as an operator's would point at vendors: no simulator.
  const gateway = await startGatewayProcess({
    DATABASE_URL: `sqlite:${join(directory, 'gateway.db')}`,
    NODE_OPTIONS: `--import=${pathToFileURL(hook).href}`,
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    OPENAI_API_KEY: 'sk-startup-modules',
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
    ANTHROPIC_API_KEY: 'sk-startup-modules',
  });
  try {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  } finally {
    await gateway.stop();
  }
  const packages = readFileSync(log, 'utf8')
    .split('\n')
    .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
    .filter((name) => name !== undefined);
  loaded = new Set(packages);
}, 60_000);

afterAll(() => rmSync(directory, { recursive: true, force: true }));

it('records what the gateway loads (the hook sees its libraries)', () => {
  for (const name of ['fastify', 'undici', 'better-sqlite3', 'zod']) expect(loaded).toContain(name);
});

it('leaves the libraries of features not used yet out of the started process', () => {
  expect(LOADED_ON_FIRST_USE.filter((name) => loaded.has(name))).toEqual([]);
});
