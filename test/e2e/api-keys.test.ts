import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;

beforeAll(async () => {
  harness = await startTestGateway();
});

afterAll(async () => {
  await harness?.close();
});

const PROMPT = [{ role: 'user' as const, content: 'ping' }];

function sdk(key: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
}

async function api(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${harness.gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

describe('API keys', () => {
  it('a revoked key gets 401 on the very next request', async () => {
    const { key, keyId } = await harness.createAccountWithKey();
    const client = sdk(key);
    await expect(client.chat.completions.create({ model: 'beta-5.4', messages: PROMPT })).resolves.toBeDefined();
    const revoked = await api(key, 'DELETE', `/v1/keys/${keyId}`);
    expect(revoked).toEqual({ status: 200, json: { id: keyId, object: 'api_key', revoked: true } });
    const error = await client.chat.completions
      .create({ model: 'beta-5.4', messages: PROMPT })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).message).toMatch(/revoked/);
  });

  it('creates keys shown once, lists them by name and hint only', async () => {
    const { key } = await harness.createAccountWithKey();
    const created = await api(key, 'POST', '/v1/keys', { name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.json.key).toMatch(/^sk-tg-[A-Za-z0-9_-]{43}$/);
    expect(created.json.hint).toBe(`sk-tg-…${created.json.key.slice(-4)}`);
    await expect(
      sdk(created.json.key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT }),
    ).resolves.toBeDefined();

    const listed = await api(key, 'GET', '/v1/keys');
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((entry: { name: string }) => entry.name).sort()).toEqual(['ci', 'test']);
    expect(JSON.stringify(listed.json)).not.toContain(created.json.key);
    expect(JSON.stringify(listed.json)).not.toContain(key);
    const entry = listed.json.data.find((candidate: { name: string }) => candidate.name === 'ci');
    expect(entry).toMatchObject({ status: 'active', expires_at: null, revoked_at: null });
  });

  it('rotates a key: new key works, old key gets 401, name and expiry kept', async () => {
    const { key } = await harness.createAccountWithKey();
    const original = await api(key, 'POST', '/v1/keys', { name: 'deploy', expires_in_days: 30 });
    const rotated = await api(key, 'POST', `/v1/keys/${original.json.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect(rotated.json).toMatchObject({
      name: 'deploy',
      expires_at: original.json.expires_at,
      replaces: original.json.id,
    });
    expect(rotated.json.key).not.toBe(original.json.key);
    await expect(
      sdk(rotated.json.key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT }),
    ).resolves.toBeDefined();
    await expect(
      sdk(original.json.key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const again = await api(key, 'POST', `/v1/keys/${original.json.id}/rotate`);
    expect(again.status).toBe(404);
  });

  it('revokes and rotates with Content-Type: application/json and no body (what many HTTP clients send)', async () => {
    const { key } = await harness.createAccountWithKey();
    const emptyJson = (method: string, path: string) =>
      fetch(`${harness.gateway.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
    const first = await api(key, 'POST', '/v1/keys', { name: 'rotate-me' });
    const rotated = await emptyJson('POST', `/v1/keys/${first.json.id}/rotate`);
    expect(rotated.status).toBe(201);
    const replacement = (await rotated.json()) as { id: string; key: string; replaces: string };
    expect(replacement.replaces).toBe(first.json.id);
    const revoked = await emptyJson('DELETE', `/v1/keys/${replacement.id}`);
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toEqual({ id: replacement.id, object: 'api_key', revoked: true });
    const statuses = Object.fromEntries(
      (await api(key, 'GET', '/v1/keys')).json.data.map((entry: { id: string; status: string }) => [
        entry.id,
        entry.status,
      ]),
    );
    expect(statuses).toMatchObject({ [first.json.id]: 'revoked', [replacement.id]: 'revoked' });
    await expect(sdk(replacement.key).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("still answers an empty body on the chat routes with a 400 saying so, in each route's shape", async () => {
    const { key } = await harness.createAccountWithKey();
    const empty = (path: string) =>
      fetch(`${harness.gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
    const openai = await empty('/v1/chat/completions');
    expect(openai.status).toBe(400);
    expect(((await openai.json()) as { error: unknown }).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_json',
      message: expect.stringMatching(/body is empty/),
    });
    const anthropic = await empty('/v1/messages');
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/body is empty/) },
    });
    // And a body of only whitespace on a key route that takes none is no body either.
    const created = await api(key, 'POST', '/v1/keys', { name: 'spaces' });
    const spaced = await fetch(`${harness.gateway.url}/v1/keys/${created.json.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: ' \n',
    });
    expect(spaced.status).toBe(200);
  });

  it("cannot revoke another account's key", async () => {
    const alice = await harness.createAccountWithKey();
    const bob = await harness.createAccountWithKey();
    const attempt = await api(alice.key, 'DELETE', `/v1/keys/${bob.keyId}`);
    expect(attempt.status).toBe(404);
    await expect(sdk(bob.key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT })).resolves.toBeDefined();
  });

  it('accepts the key as x-api-key as well as a bearer token', async () => {
    const { key } = await harness.createAccountWithKey();
    const response = await fetch(`${harness.gateway.url}/v1/models`, { headers: { 'x-api-key': key } });
    expect(response.status).toBe(200);
  });

  it('an expired key gets 401 saying it expired', async () => {
    const { accountId } = await harness.createAccountWithKey();
    const created = await harness.gateway.keys.create(accountId, accountId, {
      name: 'short-lived',
      expiresAt: Date.now() + 300,
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const error = await sdk(created.secret)
      .chat.completions.create({ model: 'beta-5.4', messages: PROMPT })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).toMatch(/expired/);
  });

  it('rejects invalid key inputs with a clear 400', async () => {
    const { key } = await harness.createAccountWithKey();
    expect((await api(key, 'POST', '/v1/keys', {})).json.error.param).toBe('name');
    expect((await api(key, 'POST', '/v1/keys', { name: 'x', expires_at: 1 })).status).toBe(400);
    expect((await api(key, 'POST', '/v1/keys', { name: 'x', colour: 'red' })).status).toBe(400);
  });

  it('lists the eleven public models in the OpenAI list shape', async () => {
    const { key } = await harness.createAccountWithKey();
    const models = await sdk(key).models.list();
    expect(models.data.map((model) => model.id)).toEqual([
      'alpha-opus-4-8',
      'alpha-sonnet-5',
      'alpha-haiku-4-5',
      'beta-5.5',
      'beta-5.4',
      'o3',
      'o4-mini',
      'gamma-2.5-pro',
      'gamma-3.5-flash',
      'delta-v4-flash',
      'delta-r1',
    ]);
    expect((await sdk(key).models.retrieve('delta-r1')).owned_by).toBe('tollgate-delta');
  });

  it('never writes a key to the logs', async () => {
    const { key } = await harness.createAccountWithKey();
    await sdk(key).chat.completions.create({ model: 'beta-5.4', messages: PROMPT });
    await sdk(`${key.slice(0, -1)}x`)
      .models.list()
      .catch(() => undefined);
    const created = await api(key, 'POST', '/v1/keys', { name: 'logged?' });
    await harness.flushLogs();
    expect(harness.logs.length).toBeGreaterThan(0);
    const logText = harness.logs.join('');
    expect(logText).not.toContain(key.slice(6));
    expect(logText).not.toContain(created.json.key.slice(6));
  });
});
