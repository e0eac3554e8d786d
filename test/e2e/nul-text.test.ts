/**
 * U+0000 in what a client names or types: PostgreSQL cannot store it (it used to answer 500 `invalid byte
 * sequence for encoding "UTF8": 0x00`), SQLite can. Both backends must answer alike: a 400 naming the field
 * for a key name or an email; a password may hold it (only its hash is stored).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

describe.each([{ database: 'sqlite' }, { database: 'postgres' }])('NUL characters on $database', ({ database }) => {
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ postgres: database === 'postgres' });
  });

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

  it('registering with an email holding one is a 400 naming the email, and creates no account', async () => {
    const email = uniqueEmail('nul');
    const withNul = email.replace('@', '\u0000@');
    const reply = await new DashboardClient(harness.gateway.url).register(withNul, PASSWORD);
    expect(reply.status).toBe(400);
    expect(reply.json.error).toMatchObject({ code: 'invalid_request', field: 'email' });
    expect(reply.json.error.message).toMatch(/control characters/);
    // Not stored under the address without it either (SQLite would have stored the NUL as given).
    expect((await new DashboardClient(harness.gateway.url).register(email, PASSWORD)).status).toBe(201);
  });

  it('logging in with an email holding one is a 400 naming the email, not a 500', async () => {
    const reply = await new DashboardClient(harness.gateway.url).login('no\u0000body@example.com', PASSWORD);
    expect(reply.status).toBe(400);
    expect(reply.json.error).toMatchObject({ code: 'invalid_request', field: 'email' });
  });

  it('a password may hold one: it registers and logs in with exactly that password', async () => {
    const email = uniqueEmail('nulpass');
    const password = `${PASSWORD}\u0000tail`;
    expect((await new DashboardClient(harness.gateway.url).register(email, password)).status).toBe(201);
    expect((await new DashboardClient(harness.gateway.url).login(email, password)).status).toBe(200);
    expect((await new DashboardClient(harness.gateway.url).login(email, `${PASSWORD}tail`)).status).toBe(401);
    expect((await new DashboardClient(harness.gateway.url).login(email, PASSWORD)).status).toBe(401);
  });

  it('POST /v1/keys with a name holding one is a 400 naming it in OpenAI shape, and creates no key', async () => {
    const { key } = await harness.createAccountWithKey();
    const created = await api(key, 'POST', '/v1/keys', { name: 'ci\u0000' });
    expect(created.status).toBe(400);
    expect(created.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: 'name' });
    const listed = await api(key, 'GET', '/v1/keys');
    expect(listed.json.data.map((entry: { name: string }) => entry.name)).toEqual(['test']);
  });

  it('the dashboard refuses such a key name too, naming it', async () => {
    const dashboard = new DashboardClient(harness.gateway.url);
    expect((await dashboard.register(uniqueEmail('nulkey'), PASSWORD)).status).toBe(201);
    const created = await dashboard.post('/api/keys', { name: '\u0000' });
    expect(created.status).toBe(400);
    expect(created.json.error).toMatchObject({ code: 'invalid_request', field: 'name' });
    expect((await dashboard.get('/api/keys')).json.keys).toEqual([]);
  });

  it('a path no service checks (an operator search) is refused with a 400 by the storage net, not a 500', async () => {
    const email = uniqueEmail('ops');
    await harness.gateway.accounts.create({ email, password: PASSWORD, role: 'admin' });
    const dashboard = new DashboardClient(harness.gateway.url);
    expect((await dashboard.login(email, PASSWORD)).status).toBe(200);
    const search = await dashboard.get('/api/admin/accounts?query=ops%00');
    expect(search.status).toBe(400);
    expect(search.json.error).toMatchObject({ code: 'invalid_request' });
    expect(search.json.error.message).toMatch(/NUL/);
    expect(harness.logs.join('')).not.toMatch(/"level":50/);
  });
});
