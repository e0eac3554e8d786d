/**
 * What the router refuses before any route or hook runs, against the shipped process over real HTTP: a path
 * with a malformed percent-escape, and a path parameter longer than the router takes. Each answers in the shape
 * of the protocol its path belongs to, like every other error of the gateway, never in fastify's own
 * `{statusCode, error, message}` with its FST_ codes; an over-long id below the router's limit reaches its
 * route and gets that route's usual "not found". Nothing is stored or changed by any of these requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { rawExchange } from '../helpers/raw-http.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

let harness: TestGateway;
let key: string;
let accountId: string;
let keyId: string;
let dashboard: DashboardClient;
let dashboardAccountId: string;
let dashboardKeyId: string;
let before: string;

const PASSWORD = 'correct horse battery staple';
/** Longer than fastify's default parameter limit (100), well below the gateway's. */
const LONG = 'a'.repeat(150);
/** Past the gateway's parameter limit: the router refuses it before any route. */
const OVERLONG = 'b'.repeat(1_200);

/** google.rpc status names of the HTTP statuses these tests meet. */
const GOOGLE_STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 404: 'NOT_FOUND' };

/** A path for a test title: each over-long parameter as its length. */
function label(path: string): string {
  return path.replace(/[ab]{100,}/g, (run) => `{${run.length} chars}`);
}

/** Rows of [method, path, …] as objects whose `name` is the path's label. */
function titled<Row extends readonly [string, string, ...string[]]>(
  rows: readonly Row[],
): Array<{ row: Row; method: string; name: string }> {
  return rows.map((row) => ({ row, method: row[0], name: label(row[1]) }));
}

type Shape = 'openai' | 'anthropic' | 'google' | 'dashboard';

interface Answer {
  status: number;
  head: string;
  text: string;
  json: { type?: unknown; request_id?: unknown; error: Record<string, unknown> };
}

/** One request written byte for byte (fetch would re-encode a malformed escape), with the key unless told not to. */
async function send(
  method: string,
  path: string,
  headers: Record<string, string> = { authorization: `Bearer ${key}` },
  body?: string,
): Promise<Answer> {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  const raw = await rawExchange(harness.gateway.url, 30_000, `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).toLowerCase();
  let text = raw.slice(split + 4);
  // Fastify answers these with a content-length; a chunked reply would hide the JSON behind its chunk sizes.
  expect(head).not.toContain('transfer-encoding: chunked');
  text = Buffer.from(text, 'latin1').toString('utf8');
  return { status: Number(/^http\/1\.1 (\d{3})/.exec(head)?.[1]), head, text, json: JSON.parse(text) };
}

/** The protocol's error shape, exactly: the keys each SDK parses and nothing of fastify's or of the gateway's inside. */
function expectShape(answer: Answer, shape: Shape, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.head).toContain('content-type: application/json');
  expect(answer.head).toMatch(/\r\nx-request-id: req_[0-9a-f]+/);
  for (const leak of [
    'FST_',
    'statusCode',
    'Bad Request',
    'not a valid url component',
    'max param length',
    'node_modules',
    '    at ',
    'dist/src',
  ]) {
    expect(answer.text).not.toContain(leak);
  }
  const { json } = answer;
  switch (shape) {
    case 'openai':
      expect(Object.keys(json)).toEqual(['error']);
      expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
      expect(json.error).toMatchObject({ code, type: 'invalid_request_error', message: expect.any(String) });
      break;
    case 'anthropic':
      expect(Object.keys(json).sort()).toEqual(['error', 'request_id', 'type']);
      expect(json.type).toBe('error');
      expect(json.request_id).toMatch(/^req_[0-9a-f]{32}$/);
      expect(Object.keys(json.error).sort()).toEqual(['message', 'type']);
      expect(json.error.type).toBe(status === 404 ? 'not_found_error' : 'invalid_request_error');
      break;
    case 'google':
      expect(Object.keys(json)).toEqual(['error']);
      expect(json.error).toMatchObject({ code: status, status: GOOGLE_STATUS[status], message: expect.any(String) });
      expect(JSON.stringify(json.error.details)).toContain(code.toUpperCase());
      break;
    case 'dashboard':
      expect(answer.head).toContain('\r\ncache-control: no-store');
      expect(Object.keys(json)).toEqual(['error']);
      expect(json.error).toMatchObject({ code, message: expect.any(String) });
      expect(['code', 'field', 'message']).toEqual(expect.arrayContaining(Object.keys(json.error)));
      break;
  }
}

/** What any of these requests could have changed: both accounts' keys, usage and stored responses. */
async function snapshot(): Promise<string> {
  const { storage } = harness.gateway;
  const keys = async (account: string) =>
    (await storage.apiKeys.listByAccount(account)).map(({ lastUsedAt: _used, ...record }) => record);
  // Money columns are bigints, which JSON has no number for.
  const json = (value: unknown) =>
    JSON.stringify(value, (_key, field: unknown) => (typeof field === 'bigint' ? `${field}n` : field));
  return json({
    keys: await keys(accountId),
    dashboardKeys: await keys(dashboardAccountId),
    usage: await storage.usage.listByAccount(accountId, 100),
    dashboardUsage: await storage.usage.listByAccount(dashboardAccountId, 100),
  });
}

beforeAll(async () => {
  harness = await startTestGateway();
  ({ key, accountId, keyId } = await harness.createAccountWithKey());
  const email = `framework-errors-${Date.now()}@example.com`;
  dashboardAccountId = (await harness.gateway.accounts.create({ email, password: PASSWORD })).id;
  dashboardKeyId = (await harness.gateway.keys.create(dashboardAccountId, dashboardAccountId, { name: 'dashboard' }))
    .record.id;
  dashboard = new DashboardClient(harness.gateway.url);
  expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
  before = await snapshot();
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

/** The dashboard's session cookie and CSRF token, so its requests get past the session hook to the route. */
function session(): Record<string, string> {
  return { cookie: `tg_session=${dashboard.cookie!}`, 'x-csrf-token': dashboard.csrfToken! };
}

describe('a malformed percent-escape in the path: 400 in the path protocol shape', () => {
  it.each([
    ['POST', '/v1/chat/completions/%ZZ', 'openai'],
    ['POST', '/v1/messages/%ZZ', 'anthropic'],
    ['GET', '/v1/responses/%ZZ', 'openai'],
    ['DELETE', '/v1/responses/%ZZ', 'openai'],
    ['GET', '/v1/responses/%ZZ/input_items', 'openai'],
    ['POST', '/v1beta/models/%ZZ:generateContent', 'google'],
    ['POST', '/v1beta/models/%ZZ:streamGenerateContent', 'google'],
    ['GET', '/v1beta/models/%ZZ', 'google'],
    ['POST', '/v1/models/%ZZ:generateContent', 'google'],
    ['GET', '/v1/models/%ZZ', 'openai'],
    ['PATCH', '/v1/keys/%ZZ', 'openai'],
    ['DELETE', '/v1/keys/%ZZ', 'openai'],
    ['POST', '/v1/keys/%ZZ/rotate', 'openai'],
    // Not UTF-8 once decoded: the same refusal.
    ['DELETE', '/v1/keys/%C0%80', 'openai'],
    ['GET', '/%ZZ', 'openai'],
  ] as const)('%s %s → 400 (%s shape)', async (method, path, shape) => {
    const answer = await send(
      method,
      path,
      { authorization: `Bearer ${key}` },
      method === 'POST' || method === 'PATCH' ? '{}' : undefined,
    );
    expectShape(answer, shape, 400, 'invalid_request');
    expect(answer.json.error.message).toMatch(/percent-escape/);
  });

  it.each([
    ['POST', '/api/keys/%ZZ/revoke'],
    ['POST', '/api/keys/%ZZ/rotate'],
    ['PATCH', '/api/keys/%ZZ'],
    ['POST', '/api/admin/accounts/%ZZ/credit'],
  ] as const)('%s %s → 400 (dashboard shape)', async (method, path) => {
    expectShape(await send(method, path, session(), '{}'), 'dashboard', 400, 'invalid_request');
  });

  it('a Google SDK asking a model under /v1/models gets Google shape, as that route answers it', async () => {
    expectShape(
      await send('GET', '/v1/models/%ZZ', { 'x-goog-api-key': key, 'x-goog-api-client': 'google-genai-sdk/1.0.0' }),
      'google',
      400,
      'invalid_request',
    );
  });

  it('an absolute-form target (as a proxy sends it) is read by its path: its shape, never the dashboard page', async () => {
    expectShape(
      await send(
        'POST',
        'http://127.0.0.1/v1beta/models/%ZZ:generateContent',
        { authorization: `Bearer ${key}` },
        '{}',
      ),
      'google',
      400,
      'invalid_request',
    );
    const wrongMethod = await send('GET', 'http://127.0.0.1/v1/chat/completions');
    expectShape(wrongMethod, 'openai', 405, 'method_not_allowed');
    expect(wrongMethod.head).toContain('\r\nallow: post');
  });

  it('is logged as one request line with its id and status, like any other request', async () => {
    const answer = await send('GET', '/v1/responses/%ZZ?probe=log-line');
    const id = /x-request-id: (req_[0-9a-f]+)/.exec(answer.head)![1]!;
    await expect
      .poll(() => harness.logs.find((line) => line.includes(id) && line.includes('"msg":"request"')), {
        timeout: 5_000,
      })
      .toBeDefined();
    const line = JSON.parse(
      harness.logs.find((entry) => entry.includes(id) && entry.includes('"msg":"request"'))!,
    ) as Record<string, unknown>;
    expect(line).toMatchObject({ method: 'GET', url: '/v1/responses/%ZZ', status: 400 });
  });
});

describe('a path parameter over 100 characters reaches its route: the protocol usual not-found', () => {
  it.each(
    titled([
      ['GET', `/v1/responses/resp_${LONG}`, 'openai', 'not_found'],
      ['DELETE', `/v1/responses/resp_${LONG}`, 'openai', 'not_found'],
      ['GET', `/v1/responses/resp_${LONG}/input_items`, 'openai', 'not_found'],
      ['GET', `/v1/models/${LONG}`, 'openai', 'not_found'],
      ['PATCH', `/v1/keys/key_${LONG}`, 'openai', 'not_found'],
      ['DELETE', `/v1/keys/key_${LONG}`, 'openai', 'not_found'],
      ['POST', `/v1/keys/key_${LONG}/rotate`, 'openai', 'not_found'],
      ['POST', `/v1beta/models/${LONG}:generateContent`, 'google', 'not_found'],
      ['POST', `/v1beta/models/${LONG}:countTokens`, 'google', 'not_found'],
      ['GET', `/v1beta/models/${LONG}`, 'google', 'not_found'],
    ] as const),
  )('$method $name → 404', async ({ row: [method, path, shape, code] }) => {
    const body =
      method === 'PATCH'
        ? '{"name":"renamed"}'
        : method === 'POST'
          ? '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
          : undefined;
    const answer = await send(method, path, { authorization: `Bearer ${key}` }, body);
    expectShape(answer, shape, 404, code);
    // The route's own answer about the id, not the router's "no route".
    expect(answer.json.error.message).not.toMatch(/^No route/);
  });

  it('the Anthropic API has no routes with a parameter: a long segment is its unknown path', async () => {
    const answer = await send('POST', `/v1/messages/${LONG}`, { 'x-api-key': key }, '{}');
    expectShape(answer, 'anthropic', 404, 'not_found');
    expect(answer.json.error.message).toMatch(/^No route/);
  });

  it('an unknown Gemini model with a long name is the 404 of any unknown model, naming it', async () => {
    const answer = await send(
      'POST',
      `/v1beta/models/${LONG}:generateContent`,
      { 'x-goog-api-key': key },
      '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}',
    );
    expectShape(answer, 'google', 404, 'not_found');
    expect(answer.json.error.message).toContain(LONG);
  });

  it.each(
    titled([
      ['POST', `/api/keys/key_${LONG}/revoke`],
      ['POST', `/api/keys/key_${LONG}/rotate`],
      ['PATCH', `/api/keys/key_${LONG}`],
    ] as const),
  )('$method $name with a session → 404 (dashboard shape)', async ({ row: [method, path] }) => {
    const answer = await send(method, path, session(), method === 'PATCH' ? '{"name":"renamed"}' : '{}');
    expectShape(answer, 'dashboard', 404, 'not_found');
    expect(answer.json.error).toMatchObject({ field: 'id', message: expect.stringContaining(`key_${LONG}`) });
  });

  it('without a key the route asks for one, in its own shape (the parameter no longer stops it first)', async () => {
    expectShape(
      await send('POST', `/v1beta/models/${LONG}:generateContent`, {}, '{}'),
      'google',
      401,
      'missing_api_key',
    );
    const keyless = await send('DELETE', `/v1/keys/key_${LONG}`, {});
    expect(keyless.status).toBe(401);
    expect(keyless.json.error.code).toBe('missing_api_key');
  });
});

describe('a path parameter past the router limit: the 404 of a path no route serves, in the path shape', () => {
  it.each(
    titled([
      ['POST', `/v1beta/models/${OVERLONG}:generateContent`, 'google'],
      ['DELETE', `/v1/keys/key_${OVERLONG}`, 'openai'],
      ['POST', `/v1/keys/key_${OVERLONG}/rotate`, 'openai'],
      ['DELETE', `/v1/responses/resp_${OVERLONG}`, 'openai'],
      ['GET', `/v1/responses/resp_${OVERLONG}`, 'openai'],
      ['POST', `/v1/messages/${OVERLONG}`, 'anthropic'],
    ] as const),
  )('$method $name → 404', async ({ row: [method, path, shape] }) => {
    expectShape(
      await send(method, path, { authorization: `Bearer ${key}` }, method === 'POST' ? '{}' : undefined),
      shape,
      404,
      'not_found',
    );
  });

  it('POST /api/keys/{1,200 characters}/revoke → 404 (dashboard shape)', async () => {
    expectShape(await send('POST', `/api/keys/key_${OVERLONG}/revoke`, session(), '{}'), 'dashboard', 404, 'not_found');
  });
});

describe('afterwards', () => {
  it('nothing was stored or changed, and both keys still work', async () => {
    expect(await snapshot()).toBe(before);
    const models = await fetch(`${harness.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(models.status).toBe(200);
    await models.arrayBuffer();
    const keys = await dashboard.get('/api/keys');
    expect(keys.status).toBe(200);
    expect(
      keys.json.keys.map((entry: { id: string; revokedAt: unknown }) => [entry.id, entry.revokedAt ?? null]),
    ).toEqual([[dashboardKeyId, null]]);
    expect(keyId).toMatch(/^key_/);
  });
});
