/**
 * Spend limits per period at the organisation, project and key levels, end to end: the built gateway over loopback,
 * the official OpenAI and Anthropic SDKs, the simulator upstream, real SQLite and PostgreSQL.
 *
 * - a request an organisation's or a project's limit cannot cover is refused in the caller's protocol, naming the
 *   limit's level and period; a key of another project is still served;
 * - `/v1/keys` takes and shows `limits` beside the older `spend_limit`;
 * - the dashboard's /api/limits: owners and admins set and clear, billing and viewers read, developers see nothing;
 *   bad input is a 400 naming the field with nothing changed; each change is audited with before and after.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORGANISATION_ROLES } from '../../src/accounts/organisation-roles.js';
import { ProjectService } from '../../src/accounts/project-service.js';
import { parseUsd } from '../../src/billing/money.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { team, type Team } from '../helpers/organisation-team.js';
import { startTestGateway, type TestGateway, fundedAccountWithKey } from '../helpers/test-gateway.js';

const PROMPT = [{ role: 'user' as const, content: 'ping [[sim words=3]]' }];
const run = promisify(execFile);

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('spend limits on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres', env: { FREE_TOKENS_PER_DAY: '0' } });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  const fundedAccount = () => fundedAccountWithKey(harness, '5');

  async function api(key: string, method: string, path: string, body?: unknown) {
    const response = await fetch(`${harness.gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as any };
  }

  const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
  const limit = (organisationId: string, scope: 'organisation' | 'project', scopeId: string, usd: string) =>
    harness.gateway.storage.spendLimits.set({
      organisationId,
      scope,
      scopeId,
      period: scope === 'organisation' ? 'day' : 'week',
      limitNano: parseUsd(usd),
      at: Date.now(),
    });

  it("refuses what an organisation's or a project's limit cannot cover, in the OpenAI and Anthropic shapes", async () => {
    const { key, accountId } = await fundedAccount();
    await expect(
      openai(key).chat.completions.create({ model: 'alpha-sonnet-5', messages: PROMPT }),
    ).resolves.toBeDefined();

    await limit(accountId, 'organisation', accountId, '0.000001');
    const refused = await openai(key)
      .chat.completions.create({ model: 'alpha-sonnet-5', messages: PROMPT })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('spend_limit_reached');
    expect((refused as Error).message).toMatch(
      /This organisation's spend limit of \$0\.000001 per day \(UTC\) is reached/,
    );
    const claude = await anthropic(key)
      .messages.create({ model: 'alpha-sonnet-5', max_tokens: 20, messages: PROMPT })
      .catch((error: unknown) => error);
    expect(claude).toBeInstanceOf(Anthropic.BadRequestError);
    expect((claude as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: { type: 'billing_error' },
    });
    expect((claude as Error).message).toMatch(/organisation's spend limit .* per day/);

    // The organisation's limit cleared, a project's weekly limit binds that project's keys only.
    await harness.gateway.storage.spendLimits.clear(
      { organisationId: accountId, scope: 'organisation', scopeId: accountId, period: 'day' },
      Date.now(),
    );
    const project = await new ProjectService(harness.gateway.storage.projects).create(accountId, 'Capped', null);
    const inProject = await api(key, 'POST', '/v1/keys', { name: 'capped', project_id: project.id });
    expect(inProject.status, JSON.stringify(inProject.json)).toBe(201);
    await limit(accountId, 'project', project.id, '0.000001');
    const byProject = await openai(inProject.json.key)
      .chat.completions.create({ model: 'alpha-sonnet-5', messages: PROMPT, stream: true })
      .catch((error: unknown) => error);
    expect((byProject as Error).message).toMatch(/This key's project's spend limit of \$0\.000001 per week/);
    const byProjectClaude = await anthropic(inProject.json.key)
      .messages.create({ model: 'alpha-sonnet-5', max_tokens: 20, messages: PROMPT })
      .catch((error: unknown) => error);
    expect(byProjectClaude).toBeInstanceOf(Anthropic.BadRequestError);
    expect((byProjectClaude as Error).message).toMatch(/project's spend limit .* per week/);
    // The first key is in the default project: still served.
    await expect(
      openai(key).chat.completions.create({ model: 'alpha-sonnet-5', messages: PROMPT }),
    ).resolves.toBeDefined();
    const limits = await harness.gateway.storage.spendLimits.list(accountId, Date.now());
    expect(limits.map((entry) => [entry.scope, entry.period, entry.reservedNano])).toEqual([['project', 'week', 0n]]);
  });

  it("a growing reply stops as a length stop at the organisation's limit, which it never passes", async () => {
    // beta-5.4 at $15 per million output tokens: $0.05 pays for the first slice and part of a second; the reply is
    // about 8,000 tokens, which the $5 balance would pay for: only the organisation's limit binds.
    const { key, accountId } = await fundedAccount();
    await limit(accountId, 'organisation', accountId, '0.05');
    const response = await fetch(`${harness.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'beta-5.4',
        stream: true,
        messages: [{ role: 'user', content: 'Write at length [[sim words=6000 chunk-delay=1]]' }],
      }),
    });
    expect(response.status).toBe(200);
    const reasons = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: {'))
      .flatMap((frame) => (JSON.parse(frame.slice(6)) as { choices: Array<{ finish_reason: string | null }> }).choices)
      .map((choice) => choice.finish_reason)
      .filter((reason) => reason !== null);
    expect(reasons).toEqual(['length']);
    const rows = await harness.gateway.storage.usage.listByAccount(accountId, 10);
    expect(rows.map((row) => row.status)).toEqual(['slice_refused']);
    const [organisationLimit] = await harness.gateway.storage.spendLimits.list(accountId, Date.now());
    expect(organisationLimit).toMatchObject({ usedNano: rows[0]!.costNano, reservedNano: 0n });
    expect(organisationLimit!.usedNano).toBeLessThanOrEqual(parseUsd('0.05'));
    expect(organisationLimit!.usedNano).toBeGreaterThan(parseUsd('0.048'));
    expect(await harness.gateway.storage.billing.balance(accountId)).toMatchObject({
      balanceNano: parseUsd('5') - rows[0]!.costNano,
      reservedNano: 0n,
    });
  }, 120_000);

  it("/v1/keys takes and shows a key's limits per period beside its spend_limit", async () => {
    const { key } = await fundedAccount();
    const created = await api(key, 'POST', '/v1/keys', {
      name: 'per period',
      limits: [
        { period: 'month', usd: '20' },
        { period: 'day', usd: '1' },
        { period: 'week', usd: 5 },
      ],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    expect(created.json.spend_limit).toMatchObject({ usd: '1', period: 'day' });
    expect(created.json.limits.map((entry: any) => [entry.period, entry.usd, entry.spent_usd])).toEqual([
      ['day', '1', '0'],
      ['week', '5', '0'],
      ['month', '20', '0'],
    ]);
    const id = created.json.id as string;
    for (const [body, param] of [
      [{ limits: [{ period: 'year', usd: '1' }] }, 'limits.0.period'],
      [{ limits: [{ period: 'day', usd: '-1' }] }, 'limits.0.usd'],
      [
        {
          limits: [
            { period: 'day', usd: '1' },
            { period: 'day', usd: '2' },
          ],
        },
        'limits',
      ],
      [{ limits: [], spend_limit: null }, 'limits'],
    ] as const) {
      const refused = await api(key, 'PATCH', `/v1/keys/${id}`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json.error.param).toBe(param);
    }
    // The older field still sets the key's one limit; the other periods go.
    const older = await api(key, 'PATCH', `/v1/keys/${id}`, { spend_limit: { usd: '3', period: 'week' } });
    expect(older.status).toBe(200);
    expect(older.json.limits.map((entry: any) => [entry.period, entry.usd])).toEqual([['week', '3']]);
    const cleared = await api(key, 'PATCH', `/v1/keys/${id}`, { limits: null });
    expect(cleared.json).toMatchObject({ spend_limit: null, limits: [] });
  });

  it("a key makes keys only within every one of its own limits; left out, they are the creator's", async () => {
    const { key } = await fundedAccount();
    const manager = await api(key, 'POST', '/v1/keys', {
      name: 'manager',
      limits: [
        { period: 'day', usd: '1' },
        { period: 'month', usd: '10' },
      ],
    });
    expect(manager.status).toBe(201);
    const secret = manager.json.key as string;
    // A daily limit alone would let the new key spend a month of days.
    const wider = await api(secret, 'POST', '/v1/keys', { name: 'wider', limits: [{ period: 'day', usd: '1' }] });
    expect(wider.status).toBe(403);
    expect(wider.json.error.param).toBe('limits');
    const inherited = await api(secret, 'POST', '/v1/keys', { name: 'inherited' });
    expect(inherited.status).toBe(201);
    expect(inherited.json.limits.map((entry: any) => [entry.period, entry.usd])).toEqual([
      ['day', '1'],
      ['month', '10'],
    ]);
    const raised = await api(secret, 'PATCH', `/v1/keys/${inherited.json.id}`, {
      limits: [
        { period: 'day', usd: '1' },
        { period: 'month', usd: '11' },
      ],
    });
    expect(raised.status).toBe(403);
  });

  it('the CLI sets, lists and clears limits, and refuses a bad one with nothing changed', async () => {
    const email = `cli-limits-${Date.now()}@example.com`;
    const { accountId, keyId } = await harness.createAccountWithKey(email);
    const cli = async (...args: string[]) => {
      try {
        const { stdout } = await run(process.execPath, [BUILT_CLI, ...args, '--json'], {
          env: { ...process.env, ...harness.env },
        });
        return { code: 0, json: JSON.parse(stdout) };
      } catch (error) {
        const failed = error as { code: number; stdout: string };
        return { code: failed.code, json: failed.stdout ? JSON.parse(failed.stdout) : null };
      }
    };
    const set = await cli(
      'limits',
      'set',
      '--email',
      email,
      '--scope',
      'organisation',
      '--period',
      'week',
      '--usd',
      '7',
    );
    expect(set).toMatchObject({ code: 0, json: { scope: 'organisation', scope_id: accountId, usd: '7' } });
    const keyLimit = await cli(
      'limits',
      'set',
      '--email',
      email,
      '--scope',
      'key',
      '--id',
      keyId,
      '--period',
      'total',
      '--usd',
      '1.5',
    );
    expect(keyLimit).toMatchObject({ code: 0, json: { scope: 'key', period: 'total', usd: '1.5' } });
    const refused = await cli(
      'limits',
      'set',
      '--email',
      email,
      '--scope',
      'project',
      '--id',
      'proj_nope',
      '--period',
      'day',
      '--usd',
      '1',
    );
    expect(refused.code).toBe(1);
    const listed = await cli('limits', 'list', '--email', email);
    expect(listed.json.map((entry: any) => [entry.scope, entry.period, entry.usd])).toEqual([
      ['key', 'total', '1.5'],
      ['organisation', 'week', '7'],
    ]);
    expect(
      await cli('limits', 'clear', '--email', email, '--scope', 'key', '--id', keyId, '--period', 'total'),
    ).toMatchObject({
      code: 0,
    });
    expect((await cli('limits', 'list', '--email', email, '--scope', 'key')).json).toEqual([]);
  });
});

describe('spend limits in the dashboard: roles, bad input, audit', () => {
  let harness: TestGateway;
  let crew: Team;

  beforeAll(async () => {
    harness = await startTestGateway();
    crew = await team(harness.gateway.url);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('owners and admins set and clear; billing and viewers read; developers neither; each change audited', async () => {
    const owner = crew.members.owner.client;
    const org = crew.organisationId;
    const set = await owner.call('PUT', `/api/limits/organisation/${org}/week`, { usd: '2.5' });
    expect(set.status, JSON.stringify(set.json)).toBe(200);
    expect(set.json.limit).toMatchObject({ scope: 'organisation', period: 'week', usd: '2.5', usedUsd: '0' });
    for (const role of ORGANISATION_ROLES) {
      const client = crew.members[role].client;
      const listed = await client.get('/api/limits');
      if (role === 'developer') {
        expect(listed.status).toBe(403);
        continue;
      }
      expect(listed.status).toBe(200);
      expect(listed.json.limits.map((entry: any) => [entry.scope, entry.period, entry.usd])).toEqual([
        ['organisation', 'week', '2.5'],
      ]);
      if (role === 'owner' || role === 'admin') continue;
      const refused = await client.call('PUT', `/api/limits/organisation/${org}/day`, { usd: '1' });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('role_forbids');
    }
    const admin = crew.members.admin.client;
    expect((await admin.call('PUT', `/api/limits/organisation/${org}/week`, { usd: '3' })).status).toBe(200);
    // Without the CSRF token a change is refused too.
    expect((await owner.call('PUT', `/api/limits/organisation/${org}/day`, { usd: '1' }, { csrf: false })).status).toBe(
      403,
    );

    for (const [path, body, param] of [
      [`/api/limits/team/${org}/week`, { usd: '1' }, 'scope'],
      [`/api/limits/organisation/${org}/year`, { usd: '1' }, 'period'],
      [`/api/limits/organisation/${org}/total`, { usd: '1' }, 'period'],
      [`/api/limits/organisation/${org}/week`, { usd: '-1' }, 'usd'],
      [`/api/limits/organisation/${org}/week`, { usd: 'lots' }, 'usd'],
    ] as const) {
      const refused = await owner.call('PUT', path, body);
      expect(refused.status, path).toBe(400);
      expect(refused.json.error, path).toMatchObject({ field: param });
    }
    expect((await owner.call('PUT', '/api/limits/key/key_unknown/day', { usd: '1' })).status).toBe(404);
    expect((await owner.get('/api/limits')).json.limits.map((entry: any) => entry.usd)).toEqual(['3']);

    const cleared = await owner.call('DELETE', `/api/limits/organisation/${org}/week`);
    expect(cleared.status).toBe(200);
    expect((await owner.get('/api/limits')).json.limits).toEqual([]);
    expect((await owner.call('DELETE', `/api/limits/organisation/${org}/week`)).status).toBe(404);

    const events = await harness.gateway.storage.audit.list({
      organisationId: org,
      actions: ['limit.set', 'limit.cleared'],
      limit: 10,
    });
    expect(events.map((event) => [event.action, event.beforeJson, event.afterJson])).toEqual([
      ['limit.cleared', expect.stringContaining('"usd":"3"'), null],
      ['limit.set', expect.stringContaining('"usd":"2.5"'), expect.stringContaining('"usd":"3"')],
      ['limit.set', null, expect.stringContaining('"usd":"2.5"')],
    ]);
  });
});
