import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import type { UsageRecord } from '../../src/storage/types.js';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The operator's catalog edits through the built gateway: a model and a deployment added through the operator API
 * are served and billed at the stored prices on all four client protocols with no restart, and on PostgreSQL by a
 * second instance on the same database too; a bad entry is refused naming its field with the catalog unchanged; a
 * retired model is refused naming its replacement. On SQLite and PostgreSQL.
 */

const PRICES = { input: '3.30', output: '13.90' };
/** The added model's entry, as tollgate.yaml would hold it; a PUT replaces the whole entry. */
const ADDED_MODEL = {
  family: 'alpha',
  upstreamModel: 'claude-sonnet-7',
  description: 'added through the operator API',
  contextWindow: 300000,
  maxOutputTokens: 32000,
  deployments: ['sim-alpha'],
  prices: { input: PRICES.input, output: PRICES.output, cacheRead: '0.33', cacheWrite: '4.10' },
};
const DEPLOYMENT_KEY_VARIABLE = 'CATALOG_TEST_ALPHA_KEY';
const DEPLOYMENT_KEY = 'sk-catalog-test-secret';

const run = promisify(execFile);

function perToken(usdPerMillion: string): bigint {
  return parseUsd(usdPerMillion) / 1_000_000n;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(['sqlite', 'postgres'] as const)('operator catalog edits on %s', (database) => {
  let harness: TestGateway;
  let second: GatewayProcess | undefined;
  let operator: DashboardClient;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      postgres: database === 'postgres',
      env: {
        FREE_TOKENS_PER_DAY: '0',
        CATALOG_POLL_MS: '200',
        [DEPLOYMENT_KEY_VARIABLE]: DEPLOYMENT_KEY,
        ...(database === 'postgres' ? { REDIS_URL } : {}),
      },
    });
    if (database === 'postgres') {
      // Its own journal directory; the same database, vendors and settings, and Redis for the change notices:
      // it polls only every 10 minutes, so it must pick the changes up from the notices.
      const { SETTLEMENT_JOURNAL_DIR: _journal, ...env } = harness.env;
      second = await startGatewayProcess({ ...env, REDIS_URL, CATALOG_POLL_MS: '600000' });
    }
    ({ key, accountId } = await harness.createAccountWithKey(undefined, 'enterprise'));
    await harness.gateway.storage.billing.credit({
      accountId,
      kind: 'topup',
      amountNano: parseUsd('20'),
      idempotencyKey: `t-${accountId}`,
      note: null,
      at: Date.now(),
    });
    const email = `ops-${Date.now()}@example.com`;
    await harness.gateway.accounts.create({ email, password: PASSWORD, role: 'admin' });
    operator = new DashboardClient(harness.gateway.url);
    expect((await operator.login(email, PASSWORD)).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await second?.stop();
    await harness?.close();
  });

  async function modelIds(baseUrl: string): Promise<string[]> {
    const response = await fetch(`${baseUrl}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await response.json()) as { data: Array<{ id: string }> };
    return body.data.map((model) => model.id);
  }

  async function usageOf(requestId: string): Promise<UsageRecord> {
    return until(async () => {
      const [record] = await harness.gateway.storage.usage.findByRequestIds(accountId, [requestId]);
      return record;
    }, `the usage record of ${requestId}`);
  }

  function expectBilledAtStoredPrices(record: UsageRecord): void {
    expect(record.model).toBe('alpha-sonnet-7');
    expect(record.inputTokens).toBeGreaterThan(0);
    expect(record.outputTokens).toBeGreaterThan(0);
    expect(record.cacheReadTokens + record.cacheWriteTokens).toBe(0);
    expect(record.costNano).toBe(
      BigInt(record.inputTokens) * perToken(PRICES.input) + BigInt(record.outputTokens) * perToken(PRICES.output),
    );
  }

  it('serves and bills a model added through the API on all four protocols, on every instance', async () => {
    expect(await modelIds(harness.gateway.url)).not.toContain('alpha-sonnet-7');
    const deployment = await operator.call('PUT', '/api/admin/catalog/deployments/sim-alpha', {
      family: 'alpha',
      baseUrl: harness.simulator!.baseUrls.anthropic,
      apiKeyEnv: DEPLOYMENT_KEY_VARIABLE,
      maxConcurrent: 8,
    });
    expect(deployment.status, deployment.text).toBe(200);
    // The key is read from the environment on each instance: never stored, never returned.
    expect(deployment.text).not.toContain(DEPLOYMENT_KEY);
    expect(deployment.json.deployments).toContainEqual(
      expect.objectContaining({ name: 'sim-alpha', source: 'database', apiKeyEnv: DEPLOYMENT_KEY_VARIABLE }),
    );
    const added = await operator.call('PUT', '/api/admin/catalog/models/alpha-sonnet-7', ADDED_MODEL);
    expect(added.status, added.text).toBe(200);
    expect(added.json.revision).toBe(deployment.json.revision + 1);
    expect(added.json.models).toContainEqual(
      expect.objectContaining({ id: 'alpha-sonnet-7', source: 'database', deployments: ['sim-alpha'] }),
    );
    // The instance that took the edit serves it at once.
    expect(await modelIds(harness.gateway.url)).toContain('alpha-sonnet-7');

    const prompt = 'Price check of a stored model [[sim prompt-cache=off words=12]]';
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: harness.gateway.url, maxRetries: 0 });
    const balanceBefore = (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
    const chat = await openai.chat.completions
      .create({ model: 'alpha-sonnet-7', messages: [{ role: 'user', content: prompt }] })
      .withResponse();
    expect(chat.data.model).toBe('alpha-sonnet-7');
    const messages = await anthropic.messages
      .create({ model: 'alpha-sonnet-7', max_tokens: 200, messages: [{ role: 'user', content: prompt }] })
      .withResponse();
    expect(messages.data.model).toBe('alpha-sonnet-7');
    const responses = await openai.responses.create({ model: 'alpha-sonnet-7', input: prompt }).withResponse();
    expect(responses.data.model).toBe('alpha-sonnet-7');
    const gemini = await fetch(`${harness.gateway.url}/v1beta/models/alpha-sonnet-7:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: prompt }] }] }),
    });
    expect(gemini.status).toBe(200);
    const replies = [chat.response, messages.response, responses.response, gemini];

    if (second !== undefined) {
      // The other instance picks the revision up from Redis's notice (its own poll is 10 minutes away).
      const other = second.url;
      await until(
        async () => ((await modelIds(other)).includes('alpha-sonnet-7') ? true : undefined),
        'the change notice',
      );
      const elsewhere = await fetch(`${other}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'alpha-sonnet-7', messages: [{ role: 'user', content: prompt }] }),
      });
      expect(elsewhere.status).toBe(200);
      replies.push(elsewhere);
    }

    let total = 0n;
    for (const reply of replies) {
      const record = await usageOf(reply.headers.get('x-request-id')!);
      expectBilledAtStoredPrices(record);
      total += record.costNano;
    }
    const balanceAfter = (await harness.gateway.storage.billing.balance(accountId))!.balanceNano;
    expect(balanceBefore - balanceAfter).toBe(total);
  });

  it('refuses a bad entry naming the entry and field, with the running catalog unchanged', async () => {
    const before = await operator.get('/api/admin/catalog');
    expect(before.status).toBe(200);
    const refusals: Array<[string, unknown, string, RegExp]> = [
      [
        'models/alpha-sonnet-7',
        { family: 'alpha', contextWindow: 1000, maxOutputTokens: 100, prices: { input: 'two dollars', output: '1' } },
        'models.alpha-sonnet-7.prices.input',
        /USD per 1M tokens/,
      ],
      [
        'models/omega-1',
        { family: 'omega', contextWindow: 1000, maxOutputTokens: 100, prices: { input: '1', output: '1' } },
        'models.omega-1.family',
        /alpha/,
      ],
      ['aliases/alpha-sonnet-5', { model: 'alpha-sonnet-7' }, 'aliases.alpha-sonnet-5', /shadows the model/],
      [
        'models/alpha-sonnet-7',
        { ...ADDED_MODEL, fallbacks: ['alpha-sonnet-5', 'alpha-sonnet-7'] },
        'models.alpha-sonnet-7.fallbacks',
        /cycle/,
      ],
      ['models/beta-5.4', { fallbacks: ['no-such-model'] }, 'models.beta-5.4.fallbacks', /not a model or alias/],
      [
        'deployments/keyless',
        { family: 'alpha', baseUrl: 'http://127.0.0.1:9' },
        'deployments.keyless.apiKeyEnv',
        /needs credentials/,
      ],
      [
        'deployments/unset-key',
        { family: 'alpha', baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'CATALOG_TEST_UNSET' },
        'deployments.unset-key.apiKeyEnv',
        /CATALOG_TEST_UNSET is not set/,
      ],
    ];
    for (const [path, body, field, message] of refusals) {
      const refused = await operator.call('PUT', `/api/admin/catalog/${path}`, body);
      expect(refused.status, `${path}: ${refused.text}`).toBe(400);
      expect(refused.json.error.field).toBe(field);
      expect(refused.json.error.message).toMatch(message);
    }
    const after = await operator.get('/api/admin/catalog');
    expect(after.json).toEqual(before.json);
    // Still served, at the prices that were running.
    const openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
    const { response } = await openai.chat.completions
      .create({ model: 'alpha-sonnet-7', messages: [{ role: 'user', content: 'still here [[sim prompt-cache=off]]' }] })
      .withResponse();
    expectBilledAtStoredPrices(await usageOf(response.headers.get('x-request-id')!));
  });

  it('retires a model: new requests get a 400 naming the replacement; its usage history stays', async () => {
    const retired = await operator.post('/api/admin/catalog/models/alpha-sonnet-7/retire', {
      replacement: 'alpha-sonnet-5',
    });
    expect(retired.status, retired.text).toBe(200);
    expect(retired.json.models).toContainEqual(
      expect.objectContaining({ id: 'alpha-sonnet-7', retired: true, replacement: 'alpha-sonnet-5' }),
    );
    const instances = [harness.gateway.url, ...(second === undefined ? [] : [second.url])];
    for (const url of instances) {
      await until(async () => ((await modelIds(url)).includes('alpha-sonnet-7') ? undefined : true), 'retirement');
      const openai = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
      const error = await openai.chat.completions
        .create({ model: 'alpha-sonnet-7', messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as Error).message).toMatch(/alpha-sonnet-7' has been retired\. Use 'alpha-sonnet-5' instead/);
    }
    const history = await harness.gateway.storage.usage.totalsByAccount('2000-01-01', '2999-12-31');
    expect(history.find((totals) => totals.accountId === accountId)?.requests).toBeGreaterThan(0);
    // A model added here is retired, not deleted; a stored alias or deployment is deleted.
    const deleteModel = await operator.call('DELETE', '/api/admin/catalog/models/alpha-sonnet-7');
    expect(deleteModel.status).toBe(400);
    expect(deleteModel.json.error.field).toBe('models.alpha-sonnet-7');
    // An alias with a chain, the chain cleared, then the alias deleted.
    const alias = await operator.call('PUT', '/api/admin/catalog/aliases/sonnet-chain', {
      model: 'alpha-sonnet-5',
      fallbacks: ['beta-5.4'],
    });
    expect(alias.json.aliases).toContainEqual({
      name: 'sonnet-chain',
      model: 'alpha-sonnet-5',
      fallbacks: ['beta-5.4'],
      source: 'database',
    });
    const unchained = await operator.call('DELETE', '/api/admin/catalog/aliases/sonnet-chain/fallbacks');
    expect(unchained.json.aliases).toContainEqual(expect.objectContaining({ name: 'sonnet-chain', fallbacks: [] }));
    const deletedAlias = await operator.call('DELETE', '/api/admin/catalog/aliases/sonnet-chain');
    expect(deletedAlias.status, deletedAlias.text).toBe(200);
    expect(deletedAlias.json.aliases).not.toContainEqual(expect.objectContaining({ name: 'sonnet-chain' }));
    const changes = await operator.get('/api/admin/catalog/history?limit=5');
    expect(changes.json.changes.map((change: { action: string }) => change.action)).toEqual([
      'delete',
      'put',
      'put',
      'retire',
      'put',
    ]);
    expect(changes.json.changes[3]).toMatchObject({ action: 'retire', entryId: 'alpha-sonnet-7', kind: 'model' });
    expect(changes.text).not.toContain(DEPLOYMENT_KEY);
  });

  it('is for operators only, and needs the CSRF token', async () => {
    const user = new DashboardClient(harness.gateway.url);
    expect((await user.register(`user-${Date.now()}@example.com`, PASSWORD)).status).toBe(201);
    expect((await user.get('/api/admin/catalog')).status).toBe(403);
    expect((await user.call('PUT', '/api/admin/catalog/aliases/mine', { model: 'alpha-sonnet-5' })).status).toBe(403);
    const noToken = await operator.call(
      'PUT',
      '/api/admin/catalog/aliases/mine',
      { model: 'alpha-sonnet-5' },
      {
        csrf: false,
      },
    );
    expect(noToken.status).toBe(403);
    expect((await operator.get('/api/admin/catalog')).json.aliases).not.toContainEqual(
      expect.objectContaining({ name: 'mine' }),
    );
  });

  it('edits the catalog from the CLI; the running gateway picks the change up', async () => {
    const cli = async (args: string[]) => {
      try {
        const { stdout, stderr } = await run(process.execPath, [BUILT_CLI, ...args], {
          env: { ...process.env, ...harness.env },
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        return error as { code: number; stdout: string; stderr: string };
      }
    };
    const entry = JSON.stringify({ model: 'alpha-sonnet-5', fallbacks: ['beta-5.4'] });
    const set = await cli(['catalog', 'set', '--kind', 'alias', '--id', 'sonnet-stable', '--entry', entry]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/Stored alias sonnet-stable \(revision \d+\)/);
    const served = await until(async () => {
      const reply = await fetch(`${harness.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'sonnet-stable', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return reply.status === 200 ? reply : undefined;
    }, 'the alias stored by the CLI');
    expect(served.headers.get('x-tollgate-model')).toBe('alpha-sonnet-5');

    const bad = await cli(['catalog', 'set', '--kind', 'model', '--id', 'alpha-new', '--entry', '{"family":"alpha"}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/models\.alpha-new\.prices\.input: required/);
    const history = await cli(['catalog', 'history', '--limit', '1', '--json']);
    expect(JSON.parse(history.stdout)[0]).toMatchObject({ action: 'put', entryId: 'sonnet-stable' });
    expect(JSON.parse(history.stdout)[0].changedBy).toMatch(/^cli/);
    const removed = await cli(['catalog', 'delete', '--kind', 'alias', '--id', 'sonnet-stable']);
    expect(removed.code, removed.stderr).toBe(0);
  });
});
