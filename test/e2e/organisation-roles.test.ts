import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORGANISATION_ROLES, type OrganisationRole } from '../../src/accounts/organisation-roles.js';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import type { DashboardClient, DashboardReply } from '../helpers/dashboard-client.js';
import { team, type Team } from '../helpers/organisation-team.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Five people in one organisation (owner, admin, developer, billing, viewer), each calling every dashboard route
 * that acts in it: what the role allows answers 2xx (or the route's own answer), the rest 403 `role_forbids`, and a
 * refused call changes nothing.
 */

let harness: TestGateway;
let crew: Team;

beforeAll(async () => {
  harness = await startTestGateway();
  crew = await team(harness.gateway.url);
}, 120_000);

afterAll(async () => {
  await harness?.close();
});

const everyone = ORGANISATION_ROLES;
const only = (...roles: OrganisationRole[]) => roles;

interface RouteCase {
  name: string;
  allowed: readonly OrganisationRole[];
  /** The status an allowed call answers (default: 2xx). */
  allowedStatus?: number;
  /** Made before the state is read (a key to change): handed to `call`. */
  prepare?(): Promise<string>;
  call(client: DashboardClient, role: OrganisationRole, prepared: string): Promise<DashboardReply>;
  /** A fingerprint of what the route would change: equal before and after a refused call. */
  state?(): Promise<unknown>;
}

const keysOf = async () =>
  (await harness.gateway.storage.apiKeys.listByAccount(crew.organisationId)).map((key) => [key.id, key.revokedAt]);
const pendingInvitations = async () =>
  (await harness.gateway.storage.organisationInvitations.pending(crew.organisationId, Date.now())).map((i) => i.id);
const roles = async () =>
  (await harness.gateway.storage.organisations.members(crew.organisationId)).map((m) => [m.accountId, m.role]);
const balance = async () => String((await harness.gateway.storage.billing.balance(crew.organisationId))?.balanceNano);

/** A fresh active key made by the owner, for the routes that change one. */
async function ownersKey(): Promise<string> {
  const created = await crew.members.owner.client.post('/api/keys', { name: 'owner key' });
  expect(created.status).toBe(201);
  return created.json.key.id as string;
}

const CASES: RouteCase[] = [
  ...['/api/organisation', '/api/overview', '/api/standing', '/api/models', '/api/keys', '/api/usage/daily'].map(
    (path): RouteCase => ({ name: `GET ${path}`, allowed: everyone, call: (client) => client.get(path) }),
  ),
  ...['/api/usage/requests', '/api/usage/export.csv', '/api/billing', '/api/tiers', '/api/organisation/members'].map(
    (path): RouteCase => ({ name: `GET ${path}`, allowed: everyone, call: (client) => client.get(path) }),
  ),
  {
    name: 'GET /api/billing/ledger',
    allowed: only('owner', 'admin', 'billing', 'viewer'),
    call: (client) => client.get('/api/billing/ledger'),
  },
  {
    name: 'GET /api/organisation/invitations',
    allowed: only('owner', 'admin'),
    call: (client) => client.get('/api/organisation/invitations'),
  },
  {
    name: 'POST /api/keys',
    allowed: only('owner', 'admin', 'developer'),
    call: (client, role) => client.post('/api/keys', { name: `made by ${role}` }),
    state: keysOf,
  },
  {
    name: "POST /api/keys/:id/revoke (another member's key)",
    allowed: only('owner', 'admin'),
    prepare: ownersKey,
    call: (client, _role, keyId) => client.post(`/api/keys/${keyId}/revoke`),
    state: keysOf,
  },
  {
    name: "PATCH /api/keys/:id (another member's key)",
    allowed: only('owner', 'admin'),
    prepare: ownersKey,
    call: (client, _role, keyId) => client.call('PATCH', `/api/keys/${keyId}`, { name: 'renamed' }),
    state: async () =>
      (await harness.gateway.storage.apiKeys.listByAccount(crew.organisationId)).map((key) => [key.id, key.name]),
  },
  {
    name: "POST /api/keys/:id/rotate (another member's key)",
    allowed: only('owner', 'admin'),
    prepare: ownersKey,
    call: (client, _role, keyId) => client.post(`/api/keys/${keyId}/rotate`),
    state: keysOf,
  },
  {
    name: 'POST /api/billing/redeem',
    allowed: only('owner', 'billing'),
    call: async (client) => {
      const [code] = await createRedemptionCodes(harness.gateway.storage.billing, parseUsd('1'), 1, Date.now());
      return client.post('/api/billing/redeem', { code });
    },
    state: balance,
  },
  {
    name: 'POST /api/billing/checkout (Stripe off: its own 400)',
    allowed: only('owner', 'billing'),
    allowedStatus: 400,
    call: (client) => client.post('/api/billing/checkout', { amountUsd: '10.00' }),
  },
  {
    name: 'POST /api/tiers/buy (unknown tier: its own 400)',
    allowed: only('owner', 'billing'),
    allowedStatus: 400,
    call: (client) => client.post('/api/tiers/buy', { tier: 'no-such-tier' }),
    state: balance,
  },
  {
    name: 'POST /api/organisation/invitations',
    allowed: only('owner', 'admin'),
    call: (client, role) =>
      client.post('/api/organisation/invitations', {
        email: `invited-by-${role}-${Date.now()}@example.com`,
        role: 'viewer',
      }),
    state: pendingInvitations,
  },
  {
    name: 'PATCH /api/organisation/members/:id',
    allowed: only('owner', 'admin'),
    call: (client) =>
      client.call('PATCH', `/api/organisation/members/${crew.members.viewer.accountId}`, { role: 'viewer' }),
    state: roles,
  },
];

describe('every dashboard route by role', () => {
  for (const route of CASES) {
    it(route.name, async () => {
      for (const role of ORGANISATION_ROLES) {
        const prepared = (await route.prepare?.()) ?? '';
        const before = await route.state?.();
        const reply = await route.call(crew.members[role].client, role, prepared);
        if (route.allowed.includes(role)) {
          if (route.allowedStatus === undefined) expect(reply.status, `${role}: ${reply.text}`).toBeLessThan(300);
          else expect(reply.status, `${role}: ${reply.text}`).toBe(route.allowedStatus);
          expect(reply.status, role).toBeGreaterThanOrEqual(200);
        } else {
          expect(reply.status, `${role}: ${reply.text}`).toBe(403);
          expect(reply.json.error.code, role).toBe('role_forbids');
          if (route.state !== undefined) expect(await route.state(), `${role} changed nothing`).toEqual(before);
        }
      }
    });
  }

  it('shows a developer only the keys they made, which they may change; others see them all', async () => {
    const developer = crew.members.developer;
    const made = await developer.client.post('/api/keys', { name: 'dev only' });
    expect(made.status).toBe(201);
    const keyId = made.json.key.id as string;
    const stored = await harness.gateway.storage.apiKeys.findById(crew.organisationId, keyId);
    expect(stored?.createdBy).toBe(developer.accountId);

    const seenByDeveloper = (await developer.client.get('/api/keys')).json.keys.map((key: { id: string }) => key.id);
    const own = (await harness.gateway.storage.apiKeys.listByAccount(crew.organisationId))
      .filter((key) => key.createdBy === developer.accountId)
      .map((key) => key.id);
    expect(seenByDeveloper.sort()).toEqual(own.sort());
    for (const role of ['owner', 'admin', 'viewer', 'billing'] as const) {
      const seen = (await crew.members[role].client.get('/api/keys')).json.keys.map((key: { id: string }) => key.id);
      expect(seen, role).toContain(keyId);
    }
    expect((await developer.client.call('PATCH', `/api/keys/${keyId}`, { name: 'renamed' })).status).toBe(200);
    const rotated = await developer.client.post(`/api/keys/${keyId}/rotate`);
    expect(rotated.status).toBe(201);
    const revoked = await developer.client.post(`/api/keys/${rotated.json.key.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.json.key.status).toBe('revoked');
  });

  it('lets only an owner invite or make an owner, or change one', async () => {
    const admin = crew.members.admin.client;
    const before = await pendingInvitations();
    const invite = await admin.post('/api/organisation/invitations', { email: 'new-owner@example.com', role: 'owner' });
    expect(invite.status).toBe(403);
    expect(invite.json.error).toMatchObject({ code: 'owner_only', field: 'role' });
    expect(await pendingInvitations()).toEqual(before);
    const rolesBefore = await roles();
    const promote = await admin.call('PATCH', `/api/organisation/members/${crew.members.viewer.accountId}`, {
      role: 'owner',
    });
    expect(promote.json.error.code).toBe('owner_only');
    const demote = await admin.call('PATCH', `/api/organisation/members/${crew.members.owner.accountId}`, {
      role: 'viewer',
    });
    expect(demote.json.error.code).toBe('owner_only');
    const remove = await admin.call('DELETE', `/api/organisation/members/${crew.members.owner.accountId}`);
    expect(remove.json.error.code).toBe('owner_only');
    expect(await roles()).toEqual(rolesBefore);
  });

  it('refuses a role that does not exist and an unknown member, changing nothing', async () => {
    const owner = crew.members.owner.client;
    const rolesBefore = await roles();
    const badRole = await owner.call('PATCH', `/api/organisation/members/${crew.members.viewer.accountId}`, {
      role: 'emperor',
    });
    expect(badRole.status).toBe(400);
    expect(badRole.json.error.field).toBe('role');
    const unknown = await owner.call('PATCH', '/api/organisation/members/acct_nobody', { role: 'viewer' });
    expect(unknown.status).toBe(404);
    expect(await roles()).toEqual(rolesBefore);
  });
});
