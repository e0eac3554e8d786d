/**
 * Projects end to end on both backends: the built gateway over loopback, the official OpenAI and Anthropic SDKs and
 * plain HTTP for the Responses and Gemini routes, the simulator upstream, real SQLite and PostgreSQL.
 *
 * - keys are created in a project (dashboard, `/v1/keys`, the CLI); a project of another organisation, an archived
 *   or unknown one is a 400 naming the field, with nothing created;
 * - a key's models are its own allowlist intersected with its project's, on every client protocol, the model
 *   lists and fallback chains;
 * - an archived project's keys are refused (401 in the caller's protocol);
 * - owners and admins manage projects, everyone else reads; each change is audited with before and after;
 * - usage filters by project.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORGANISATION_ROLES } from '../../src/accounts/organisation-roles.js';
import { ProjectService } from '../../src/accounts/project-service.js';
import { defaultProjectId } from '../../src/storage/project-types.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { registeredPerson, team, type Team } from '../helpers/organisation-team.js';
import { startTestGateway, type TestGateway, fundedAccountWithKey } from '../helpers/test-gateway.js';

const PROMPT = [{ role: 'user' as const, content: 'ping [[sim words=3]]' }];
const run = promisify(execFile);

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('projects on $database', ({ database }) => {
  let harness: TestGateway;
  let projects: ProjectService;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres' });
    projects = new ProjectService(harness.gateway.storage.projects);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  async function api(
    key: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: any }> {
    const response = await fetch(`${harness.gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: await response.json() };
  }

  const fundedAccount = () => fundedAccountWithKey(harness, '5');

  const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
  const keyCount = async (organisationId: string) =>
    (await harness.gateway.storage.apiKeys.listByAccount(organisationId)).length;

  it("narrows a key to its project's models on every client protocol, the model lists and fallback chains", async () => {
    const { key, accountId } = await fundedAccount();
    const gammaProject = await projects.create(accountId, 'Gamma only', ['gamma']);
    // The key's own list allows gamma-3.5-flash and the beta family; its project only gamma: one model is left.
    const created = await api(key, 'POST', '/v1/keys', {
      name: 'in project',
      project_id: gammaProject.id,
      models: ['gamma-3.5-flash', 'beta'],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    expect(created.json.project_id).toBe(gammaProject.id);
    const secret = created.json.key as string;

    const client = openai(secret);
    await expect(client.chat.completions.create({ model: 'gamma-3.5-flash', messages: PROMPT })).resolves.toBeDefined();
    for (const stream of [false, true]) {
      const refused = await client.chat.completions
        .create({ model: 'beta-5.4', messages: PROMPT, stream })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect((refused as Error).message).toMatch(/project of this API key may not use the model 'beta-5.4'.*gamma/);
    }
    const claude = anthropic(secret);
    const refusedClaude = await claude.messages
      .create({ model: 'gamma-2.5-pro', max_tokens: 20, messages: PROMPT })
      .catch((error: unknown) => error);
    // gamma-2.5-pro is in the project's family but not on the key's own list: the key's refusal.
    expect(refusedClaude).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((refusedClaude as Error).message).toMatch(/This API key may not use the model 'gamma-2.5-pro'/);
    const responses = await api(secret, 'POST', '/v1/responses', { model: 'beta-5.5', input: 'hi' });
    expect(responses.status).toBe(403);
    expect(responses.json.error.message).toMatch(/project of this API key may not use the model 'beta-5.5'/);
    const gemini = await fetch(`${harness.gateway.url}/v1beta/models/beta-5.4:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    expect(gemini.status).toBe(403);
    expect(((await gemini.json()) as any).error.status).toBe('PERMISSION_DENIED');

    expect((await client.models.list()).data.map((model) => model.id)).toEqual(['gamma-3.5-flash']);
    expect((await claude.models.list()).data.map((model) => model.id)).toEqual(['gamma-3.5-flash']);
    expect((await api(secret, 'GET', '/v1/models/beta-5.4')).status).toBe(403);
    const listed = await fetch(`${harness.gateway.url}/v1beta/models`, { headers: { 'x-goog-api-key': secret } });
    expect((((await listed.json()) as any).models as Array<{ name: string }>).map((model) => model.name)).toEqual([
      'models/gamma-3.5-flash',
    ]);

    // A fallback chain: every model of it must be allowed by the project too.
    const chained = await api(secret, 'POST', '/v1/chat/completions', {
      model: 'gamma-3.5-flash',
      models: ['beta-5.4'],
      messages: PROMPT,
    });
    expect(chained.status).toBe(403);
    expect(chained.json.error.message).toMatch(/project of this API key may not use the model 'beta-5.4'/);

    // The project's allowlist changed applies from the next request.
    await projects.setModels(accountId, gammaProject.id, ['gamma', 'beta']);
    await expect(client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT })).resolves.toBeDefined();
  });

  it("refuses an archived project's keys with a 401 in the caller's protocol", async () => {
    const { key, accountId } = await fundedAccount();
    const doomed = await projects.create(accountId, 'Doomed', null);
    const created = await api(key, 'POST', '/v1/keys', { name: 'doomed key', project_id: doomed.id });
    expect(created.status).toBe(201);
    const secret = created.json.key as string;
    await expect(
      openai(secret).chat.completions.create({ model: 'beta-5.4', messages: PROMPT }),
    ).resolves.toBeDefined();

    await projects.archive(accountId, doomed.id);
    const openaiRefusal = await openai(secret)
      .chat.completions.create({ model: 'beta-5.4', messages: PROMPT })
      .catch((error: unknown) => error);
    expect(openaiRefusal).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((openaiRefusal as Error).message).toMatch(/project of this API key is archived/);
    const anthropicRefusal = await anthropic(secret)
      .messages.create({ model: 'alpha-sonnet-5', max_tokens: 20, messages: PROMPT })
      .catch((error: unknown) => error);
    expect(anthropicRefusal).toBeInstanceOf(Anthropic.AuthenticationError);
    // The organisation's other keys (the default project's) keep working.
    await expect(openai(key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT })).resolves.toBeDefined();
  });

  it('creates keys with /v1/keys in the default project, or a live project of its organisation only', async () => {
    const { key, accountId } = await fundedAccount();
    const other = await fundedAccount();
    const foreign = await projects.create(other.accountId, 'Theirs', null);
    const archived = await projects.create(accountId, 'Gone', null);
    await projects.archive(accountId, archived.id);
    const before = await keyCount(accountId);
    for (const projectId of [foreign.id, archived.id, 'proj_nonexistent']) {
      const refused = await api(key, 'POST', '/v1/keys', { name: 'x', project_id: projectId });
      expect(refused.status).toBe(400);
      expect(refused.json.error).toMatchObject({ type: 'invalid_request_error', param: 'project_id' });
    }
    expect(await keyCount(accountId)).toBe(before);

    const plain = await api(key, 'POST', '/v1/keys', { name: 'plain' });
    expect(plain.json.project_id).toBe(defaultProjectId(accountId));
    const listed = await api(key, 'GET', '/v1/keys');
    expect(listed.json.data.map((entry: any) => entry.project_id)).toContain(defaultProjectId(accountId));

    // A key of a narrower project may not make a key in a wider one: no escalation through projects.
    const narrow = await projects.create(accountId, 'Narrow', ['delta']);
    const manager = await api(key, 'POST', '/v1/keys', { name: 'manager', project_id: narrow.id });
    const escalation = await api(manager.json.key, 'POST', '/v1/keys', { name: 'wider' });
    expect(escalation.status).toBe(403);
    expect(escalation.json.error.param).toBe('project_id');
    const inside = await api(manager.json.key, 'POST', '/v1/keys', { name: 'same', project_id: narrow.id });
    expect(inside.status).toBe(201);
    // A rotated key's replacement stays in the project, and works under its allowlist.
    const rotated = await api(key, 'POST', `/v1/keys/${inside.json.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect(rotated.json.project_id).toBe(narrow.id);
    const refused = await api(rotated.json.key, 'POST', '/v1/chat/completions', {
      model: 'beta-5.4',
      messages: PROMPT,
    });
    expect(refused.status).toBe(403);
  });

  it('the CLI creates a key in the project given, and refuses one that is not a live project of the person', async () => {
    const email = `cli-project-${Date.now()}@example.com`;
    const { accountId } = await harness.createAccountWithKey(email);
    const project = await projects.create(accountId, 'From the CLI', null);
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
    const created = await cli('keys', 'create', '--email', email, '--name', 'cli', '--project', project.id);
    expect(created).toMatchObject({ code: 0, json: { project_id: project.id } });
    const refused = await cli('keys', 'create', '--email', email, '--name', 'cli', '--project', 'proj_nope');
    expect(refused).toMatchObject({ code: 1, json: { error: expect.stringMatching(/proj_nope/) } });
    expect((await harness.gateway.storage.apiKeys.listByAccount(accountId)).map((key) => key.projectId)).toEqual([
      project.id,
      defaultProjectId(accountId),
    ]);
  });

  it('filters usage by project on the dashboard: charts, by-project sums, requests', async () => {
    const person = await registeredPerson(harness.gateway.url, 'usage');
    const client = person.client;
    const web = await client.post('/api/projects', { name: 'Web' });
    expect(web.status).toBe(201);
    const webKey = await client.post('/api/keys', { name: 'web key', projectId: web.json.project.id });
    expect(webKey.json.key.projectId).toBe(web.json.project.id);
    const defaultKey = await client.post('/api/keys', { name: 'default key' });
    expect(defaultKey.json.key.projectId).toBe(defaultProjectId(person.accountId));
    await openai(webKey.json.secret).chat.completions.create({ model: 'beta-5.4', messages: PROMPT });
    for (let i = 0; i < 2; i++)
      await openai(defaultKey.json.secret).chat.completions.create({ model: 'gamma-3.5-flash', messages: PROMPT });

    const all = await client.get('/api/usage/daily');
    expect(all.json.byProject.map((row: any) => [row.projectName, row.requests])).toEqual(
      expect.arrayContaining([
        ['Web', 1],
        ['Default', 2],
      ]),
    );
    expect(all.json.filters.projects.map((project: any) => project.projectName)).toEqual(['Default', 'Web']);
    const daily = await client.get(`/api/usage/daily?projectId=${web.json.project.id}`);
    expect(daily.json.byKey.map((row: any) => [row.keyName, row.requests])).toEqual([['web key', 1]]);
    expect(daily.json.byModel.map((row: any) => row.model)).toEqual(['beta-5.4']);
    const requests = await client.get(`/api/usage/requests?projectId=${defaultProjectId(person.accountId)}`);
    expect(requests.json.requests.map((row: any) => row.keyName)).toEqual(['default key', 'default key']);
    const csv = await client.get(`/api/usage/export.csv?projectId=${web.json.project.id}`);
    expect(csv.text.trim().split('\n')).toHaveLength(2);
  });
});

describe('projects in the dashboard: roles, audit, keys', () => {
  let harness: TestGateway;
  let crew: Team;

  beforeAll(async () => {
    harness = await startTestGateway();
    crew = await team(harness.gateway.url);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  const projectNames = async (includeArchived = false) =>
    (await harness.gateway.storage.projects.list(crew.organisationId, { includeArchived })).map((p) => [
      p.name,
      p.models,
      p.archivedAt !== null,
    ]);

  it('owners and admins manage projects; developers, billing and viewers read them and change nothing', async () => {
    const owner = crew.members.owner.client;
    const target = await owner.post('/api/projects', { name: 'Role target' });
    expect(target.status).toBe(201);
    const id = target.json.project.id as string;
    for (const role of ORGANISATION_ROLES) {
      const client = crew.members[role].client;
      const listed = await client.get('/api/projects');
      expect(listed.status).toBe(200);
      expect(listed.json.projects.map((project: any) => project.name)).toContain('Role target');
      if (role === 'owner' || role === 'admin') continue;
      const before = await projectNames(true);
      for (const reply of [
        await client.post('/api/projects', { name: `by ${role}` }),
        await client.call('PATCH', `/api/projects/${id}`, { name: `renamed by ${role}`, models: ['alpha'] }),
        await client.post(`/api/projects/${id}/archive`),
      ]) {
        expect(reply.status).toBe(403);
        expect(reply.json.error.code).toBe('role_forbids');
      }
      expect(await projectNames(true)).toEqual(before);
    }
    const admin = crew.members.admin.client;
    expect((await admin.post('/api/projects', { name: 'By admin', models: ['alpha'] })).status).toBe(201);
    expect((await admin.call('PATCH', `/api/projects/${id}`, { name: 'Admin renamed' })).status).toBe(200);
    expect((await admin.post(`/api/projects/${id}/archive`)).status).toBe(200);
    // Without the CSRF token a change is refused too.
    expect((await owner.post('/api/projects', { name: 'No token' }, { csrf: false })).status).toBe(403);
  });

  it('creates, renames, narrows and archives with an audit entry each; bad input changes nothing', async () => {
    const owner = crew.members.owner.client;
    const created = await owner.post('/api/projects', { name: ' Mobile ', models: ['gamma', 'beta-5.4'] });
    expect(created.status).toBe(201);
    expect(created.json.project).toMatchObject({ name: 'Mobile', models: ['gamma', 'beta-5.4'], isDefault: false });
    const id = created.json.project.id as string;

    const before = await projectNames(true);
    for (const [body, field, status] of [
      [{ name: 'Mobile' }, 'name', 409],
      [{ name: '' }, 'name', 400],
      [{ name: 'Fine', models: ['gpt-9'] }, 'models', 400],
      [{ name: 'Fine', models: [] }, 'models', 400],
      [{ name: 'Fine', extra: 1 }, undefined, 400],
    ] as const) {
      const refused = await owner.post('/api/projects', body);
      expect(refused.status, JSON.stringify(body)).toBe(status);
      if (field !== undefined) expect(refused.json.error.field).toBe(field);
    }
    const badPatch = await owner.call('PATCH', `/api/projects/${id}`, { name: 'Not applied', models: ['nope'] });
    expect(badPatch.status).toBe(400);
    expect(await projectNames(true)).toEqual(before);

    const renamed = await owner.call('PATCH', `/api/projects/${id}`, { name: 'Apps', models: null });
    expect(renamed.json.project).toMatchObject({ name: 'Apps', models: null });
    const defaultId = defaultProjectId(crew.organisationId);
    const refusedDefault = await owner.post(`/api/projects/${defaultId}/archive`);
    expect(refusedDefault.status).toBe(409);
    const archived = await owner.post(`/api/projects/${id}/archive`);
    expect(archived.json.project.archivedAt).toEqual(expect.any(Number));
    expect((await owner.call('PATCH', `/api/projects/${id}`, { name: 'Again' })).status).toBe(409);
    expect((await owner.get('/api/projects')).json.projects.map((p: any) => p.id)).not.toContain(id);
    expect((await owner.get('/api/projects?archived=true')).json.projects.map((p: any) => p.id)).toContain(id);

    const audit = await owner.get('/api/audit?action=project&limit=50');
    const events = audit.json.events.filter((event: any) => event.target?.id === id);
    // Changes of one millisecond sort by id, so the order is not asserted; each entry is.
    expect(events).toHaveLength(4);
    expect(events.map((event: any) => [event.action, event.before, event.after])).toEqual(
      expect.arrayContaining([
        ['project.created', null, { name: 'Mobile', models: ['gamma', 'beta-5.4'], archivedAt: null }],
        ['project.renamed', { name: 'Mobile' }, { name: 'Apps' }],
        ['project.models_changed', { models: ['gamma', 'beta-5.4'] }, { models: null }],
        [
          'project.archived',
          { name: 'Apps', models: null, archivedAt: null },
          { name: 'Apps', models: null, archivedAt: expect.any(Number) },
        ],
      ]),
    );
  });

  it('creates dashboard keys in a chosen project; a foreign, archived or unknown one is a 400 naming projectId', async () => {
    const owner = crew.members.owner.client;
    const project = await owner.post('/api/projects', { name: 'Keys here' });
    const key = await owner.post('/api/keys', { name: 'in project', projectId: project.json.project.id });
    expect(key.status).toBe(201);
    expect(key.json.key.projectId).toBe(project.json.project.id);
    const listed = await owner.get('/api/keys');
    expect(listed.json.keys.find((entry: any) => entry.id === key.json.key.id).projectId).toBe(project.json.project.id);

    const stranger = await registeredPerson(harness.gateway.url, 'stranger');
    const theirs = await stranger.client.post('/api/projects', { name: 'Theirs' });
    const gone = await owner.post('/api/projects', { name: 'Gone soon' });
    await owner.post(`/api/projects/${gone.json.project.id}/archive`);
    const before = (await harness.gateway.storage.apiKeys.listByAccount(crew.organisationId)).length;
    for (const projectId of [theirs.json.project.id, gone.json.project.id, 'proj_unknown']) {
      const refused = await owner.post('/api/keys', { name: 'nope', projectId });
      expect(refused.status).toBe(400);
      expect(refused.json.error.field).toBe('projectId');
    }
    expect((await harness.gateway.storage.apiKeys.listByAccount(crew.organisationId)).length).toBe(before);
  });
});
