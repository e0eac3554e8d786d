import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { startTestGateway, type GatewayUnderTest, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);
const CLI = BUILT_CLI;

let harness: TestGateway;
let env: Record<string, string>;
let gateway: GatewayUnderTest;

interface CliResult {
  code: number;
  json: any;
  stderr: string;
}

async function cli(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--json'], {
      env: { ...process.env, ...env },
    });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, json: failed.stdout ? JSON.parse(failed.stdout) : null, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build first (npm test does).`);
  // The CLI and the gateway process on one SQLite file, as an operator runs both on one host.
  harness = await startTestGateway({ vendors: ['openai'] });
  gateway = harness.gateway;
  env = harness.env;
});

afterAll(async () => {
  await harness?.close();
});

/** The CLI with `input` on stdin (a pipe, as `printf … | tollgate …`). */
function cliWithStdin(input: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args, '--json'],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : Number((error as { code?: number }).code ?? 1),
          json: stdout ? JSON.parse(stdout) : null,
          stderr,
        });
      },
    );
    child.stdin!.end(input);
  });
}

describe('tollgate CLI', () => {
  it('reads the password of accounts create from stdin, never needing it on the command line', async () => {
    const created = await cliWithStdin(
      'a-long-stdin-password\nignored second line\n',
      'accounts',
      'create',
      '--email',
      'stdin@example.com',
    );
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ email: 'stdin@example.com', role: 'user' });
    expect(await gateway.accounts.verifyCredentials('stdin@example.com', 'a-long-stdin-password')).not.toBeNull();
    // Nothing on stdin: a clear refusal, no account.
    const empty = await cliWithStdin('', 'accounts', 'create', '--email', 'nobody@example.com');
    expect(empty.code).toBe(1);
    expect(empty.json.error).toMatch(/No password on stdin/);
    // The rules apply as everywhere.
    expect((await cliWithStdin('short\n', 'accounts', 'create', '--email', 'short-stdin@example.com')).code).toBe(1);
  });

  it('sets the operator tier; a credit that reaches a tier by total paid raises it (tiers: defaults, pro at $50)', async () => {
    await cliWithStdin('a-long-enough-password\n', 'accounts', 'create', '--email', 'tiers@example.com');
    expect((await cli('accounts', 'tier', '--email', 'tiers@example.com', '--tier', 'enterprise')).json).toMatchObject({
      tier: 'enterprise',
      granted_tier: 'enterprise',
    });
    expect((await cli('accounts', 'tier', '--email', 'tiers@example.com', '--tier', 'standard')).json).toMatchObject({
      tier: 'standard',
    });
    expect((await cli('credit', '--email', 'tiers@example.com', '--usd', '50')).code).toBe(0);
    expect((await gateway.storage.accounts.findByEmail('tiers@example.com'))!.tier).toBe('pro');
    // The operator's lower tier stays a floor under what the payments reached.
    expect((await cli('accounts', 'tier', '--email', 'tiers@example.com', '--tier', 'standard')).json).toMatchObject({
      tier: 'pro',
      granted_tier: 'standard',
    });
  });

  it('creates an account and a key the official SDK can use; a revoked key then gets 401', async () => {
    const account = await cli(
      'accounts',
      'create',
      '--email',
      'ops@example.com',
      '--password',
      'a-long-enough-password',
    );
    expect(account).toMatchObject({ code: 0, json: { email: 'ops@example.com', role: 'user' } });

    const created = await cli('keys', 'create', '--email', 'ops@example.com', '--name', 'from-cli');
    expect(created.code).toBe(0);
    expect(created.json.key).toMatch(/^sk-tg-/);
    expect(created.json.project_id).toMatch(/^proj_default_/);

    const client = new OpenAI({ apiKey: created.json.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();

    const listed = await cli('keys', 'list', '--email', 'ops@example.com');
    expect(listed.json).toEqual([
      {
        id: created.json.id,
        name: 'from-cli',
        hint: created.json.hint,
        project_id: created.json.project_id,
        status: 'active',
        scopes: ['models:use', 'usage:read', 'keys:manage', 'account:redeem', 'audit:read'],
        models: null,
        spend_limit: null,
        limits: [],
        rate_limit: null,
      },
    ]);

    const revoked = await cli('keys', 'revoke', '--email', 'ops@example.com', '--id', created.json.id);
    expect(revoked).toMatchObject({ code: 0, json: { id: created.json.id, revoked: true } });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hello' }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('creates and updates keys with scopes, a model allowlist, a spend limit and a rate limit', async () => {
    await cli('accounts', 'create', '--email', 'scoped@example.com', '--password', 'a-long-enough-password');
    const created = await cli(
      'keys',
      'create',
      '--email',
      'scoped@example.com',
      '--name',
      'ci',
      '--scopes',
      'models:use,usage:read',
      '--models',
      'gamma,delta-r1',
      '--spend-limit',
      '0.05',
      '--period',
      'day',
      '--rpm',
      '10',
    );
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({
      name: 'ci',
      scopes: ['models:use', 'usage:read'],
      models: ['gamma', 'delta-r1'],
      spend_limit: { usd: '0.05', period: 'day', spent_usd: '0' },
      rate_limit: { requests_per_minute: 10, tokens_per_minute: null },
    });
    const client = new OpenAI({ apiKey: created.json.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hello' }] }),
    ).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);

    const updated = await cli(
      'keys',
      'update',
      '--email',
      'scoped@example.com',
      '--id',
      created.json.id,
      '--models',
      'all',
      '--spend-limit',
      'none',
      '--rpm',
      'none',
    );
    expect(updated.json).toMatchObject({
      id: created.json.id,
      models: null,
      spend_limit: null,
      rate_limit: null,
      scopes: ['models:use', 'usage:read'],
    });
    await expect(
      client.chat.completions.create({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hello' }] }),
    ).resolves.toBeDefined();

    // Bad values: exit 1 naming the field, nothing created or changed.
    expect(
      await cli('keys', 'create', '--email', 'scoped@example.com', '--name', 'bad', '--scopes', 'admin'),
    ).toMatchObject({ code: 1, json: { error: expect.stringMatching(/'scopes'/) } });
    expect(
      await cli(
        'keys',
        'create',
        '--email',
        'scoped@example.com',
        '--name',
        'bad',
        '--spend-limit=-1',
        '--period',
        'day',
      ),
    ).toMatchObject({ code: 1, json: { error: expect.stringMatching(/spend_limit\.usd/) } });
    expect(
      await cli(
        'keys',
        'update',
        '--email',
        'scoped@example.com',
        '--id',
        created.json.id,
        '--spend-limit',
        '1',
        '--period',
        'year',
      ),
    ).toMatchObject({ code: 1, json: { error: expect.stringMatching(/spend_limit\.period/) } });
    expect((await cli('keys', 'list', '--email', 'scoped@example.com')).json).toHaveLength(1);
  });

  it('exits 1 with a JSON error for bad input', async () => {
    expect(
      await cli('accounts', 'create', '--email', 'ops@example.com', '--password', 'a-long-enough-password'),
    ).toMatchObject({
      code: 1,
      json: { error: expect.stringMatching(/already exists/) },
    });
    expect(await cli('accounts', 'create', '--email', 'short@example.com', '--password', 'short')).toMatchObject({
      code: 1,
    });
    expect(await cli('keys', 'create', '--email', 'nobody@example.com', '--name', 'x')).toMatchObject({ code: 1 });
    expect(await cli('keys', 'revoke', '--email', 'ops@example.com', '--id', 'key_missing')).toMatchObject({ code: 1 });
    expect(await cli('frobnicate')).toMatchObject({ code: 1 });
  });

  it('migrate is idempotent', async () => {
    expect(await cli('migrate')).toEqual({ code: 0, json: { applied: [] }, stderr: '' });
  });

  it('reports configuration errors by setting name', async () => {
    const saved = env;
    env = { ...env, PORT: 'eighty' };
    const result = await cli('migrate');
    env = saved;
    expect(result.code).toBe(1);
    expect(result.json.error).toMatch(/PORT/);
  });
});
