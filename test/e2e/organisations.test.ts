import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Organisations through the dashboard API of the shipped gateway: a new person owns a personal organisation,
 * creates another, switches between them, and cannot switch into one they do not belong to; bad input changes
 * nothing.
 */

const PASSWORD = 'correct horse battery staple';
let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway();
}, 120_000);

afterAll(async () => {
  await gateway?.close();
});

async function registered(): Promise<{ client: DashboardClient; accountId: string }> {
  const client = new DashboardClient(gateway.gateway.url);
  const reply = await client.register(`org-${Date.now()}-${Math.random()}@example.com`, PASSWORD);
  expect(reply.status).toBe(201);
  return { client, accountId: reply.json.account.id };
}

describe('organisations', () => {
  it('starts a person in a personal organisation they own, with the account id', async () => {
    const { client, accountId } = await registered();
    const session = await client.get('/api/session');
    expect(session.json.organisation).toMatchObject({ id: accountId, name: 'Personal', role: 'owner' });
    // What the role allows comes with it, from the server's one table (the web app shows its controls by it).
    expect(session.json.organisation.permissions).toEqual([
      'organisation:read',
      'organisation:manage',
      'members:manage',
      'keys:own',
      'keys:manage',
      'limits:manage',
      'alerts:manage',
      'billing:manage',
      'billing:read',
      'audit:read',
      'models:call',
    ]);
    const list = await client.get('/api/organisations');
    expect(list.json.organisations).toEqual([expect.objectContaining({ id: accountId, role: 'owner' })]);
  });

  it('creates an organisation and switches the session into it and back', async () => {
    const { client, accountId } = await registered();
    const created = await client.post('/api/organisations', { name: '  Acme Labs ' });
    expect(created.status).toBe(201);
    expect(created.json.organisation).toMatchObject({ name: 'Acme Labs', role: 'owner' });
    const acme = created.json.organisation.id as string;
    expect(acme).toMatch(/^org_[0-9a-f]{32}$/);

    expect((await client.get('/api/organisation')).json.organisation.id).toBe(accountId);
    const switched = await client.post('/api/organisations/current', { organisationId: acme });
    expect(switched.status).toBe(200);
    expect((await client.get('/api/organisation')).json.organisation).toMatchObject({ id: acme, name: 'Acme Labs' });
    const list = await client.get('/api/organisations');
    expect(list.json.current.id).toBe(acme);
    expect(list.json.organisations.map((entry: { id: string }) => entry.id)).toEqual([accountId, acme]);
    await client.post('/api/organisations/current', { organisationId: accountId });
    expect((await client.get('/api/organisation')).json.organisation.id).toBe(accountId);
  });

  it("refuses to switch into another person's organisation or a made-up one, and changes nothing", async () => {
    const owner = await registered();
    const team = (await owner.client.post('/api/organisations', { name: 'Team' })).json.organisation.id as string;
    const stranger = await registered();
    for (const organisationId of [team, owner.accountId, 'org_nope']) {
      const reply = await stranger.client.post('/api/organisations/current', { organisationId });
      expect(reply.status).toBe(404);
      expect(reply.json.error).toMatchObject({ code: 'not_found', field: 'organisationId' });
    }
    expect((await stranger.client.get('/api/organisation')).json.organisation.id).toBe(stranger.accountId);
  });

  it('refuses an empty, over-long or control-character name', async () => {
    const { client, accountId } = await registered();
    for (const name of ['   ', 'x'.repeat(101), 'a\u0007b']) {
      const reply = await client.post('/api/organisations', { name });
      expect(reply.status).toBe(400);
      expect(reply.json.error.field).toBe('name');
    }
    const list = await client.get('/api/organisations');
    expect(list.json.organisations.map((entry: { id: string }) => entry.id)).toEqual([accountId]);
  });

  it('asks for a session', async () => {
    const client = new DashboardClient(gateway.gateway.url);
    await client.open();
    expect((await client.get('/api/organisations')).status).toBe(401);
    expect((await client.post('/api/organisations', { name: 'X' })).status).toBe(401);
  });
});
