/**
 * What each role of an organisation tries in the organisation story: one dashboard call per action, the roles that
 * may make it, and a fingerprint of what the actions change, so a refused call can be shown to have changed nothing.
 */
import { expect } from 'vitest';
import { ORGANISATION_ROLES, type OrganisationRole } from '../../src/accounts/organisation-roles.js';
import { parseUsd } from '../../src/billing/money.js';
import { createRedemptionCodes } from '../../src/billing/redemption-codes.js';
import type { Storage } from '../../src/storage/types.js';
import type { DashboardReply } from './dashboard-client.js';
import type { TeamMember } from './organisation-team.js';

export interface RoleAction {
  allowed: readonly OrganisationRole[];
  call(person: TeamMember, role: OrganisationRole): Promise<DashboardReply>;
}

/** Create a key, set a limit, create an alert, top up, read the ledger, invite, read the audit log. */
export function roleActions(storage: Storage, organisationId: string): Record<string, RoleAction> {
  return {
    'create key': {
      allowed: ['owner', 'admin', 'developer'],
      call: (person, role) => person.client.post('/api/keys', { name: `made by ${role}` }),
    },
    'set a limit': {
      allowed: ['owner', 'admin'],
      call: (person) => person.client.call('PUT', `/api/limits/organisation/${organisationId}/month`, { usd: '100' }),
    },
    'create an alert': {
      allowed: ['owner', 'admin', 'billing'],
      call: async (person) => {
        const created = await person.client.post('/api/alerts/rules', { kind: 'low_balance', amountUsd: '0.5' });
        // Made only to show the role may: its maker deletes it again.
        if (created.status === 201) {
          const deleted = await person.client.call('DELETE', `/api/alerts/rules/${created.json.rule.id}`);
          expect(deleted.status).toBe(200);
        }
        return created;
      },
    },
    'top up': {
      allowed: ['owner', 'billing'],
      call: async (person) => {
        const [code] = await createRedemptionCodes(storage.billing, parseUsd('1'), 1, Date.now());
        return person.client.post('/api/billing/redeem', { code });
      },
    },
    'read ledger': {
      allowed: ['owner', 'admin', 'billing', 'viewer'],
      call: (person) => person.client.get('/api/billing/ledger'),
    },
    invite: {
      allowed: ['owner', 'admin'],
      call: (person, role) =>
        person.client.post('/api/organisation/invitations', { email: `guest-of-${role}@example.com`, role: 'viewer' }),
    },
    'read audit': { allowed: ['owner', 'admin'], call: (person) => person.client.get('/api/audit') },
  };
}

/** What the actions above change: keys, limits, alert rules, the balance, pending invitations. */
export async function organisationState(storage: Storage, organisationId: string): Promise<unknown> {
  const now = Date.now();
  return {
    keys: (await storage.apiKeys.listByAccount(organisationId)).length,
    limits: (await storage.spendLimits.list(organisationId, now)).map((limit) => limit.limitNano),
    rules: (await storage.alerts.listRules(organisationId)).length,
    balance: (await storage.billing.balance(organisationId))?.balanceNano,
    invitations: (await storage.organisationInvitations.pending(organisationId, now)).length,
  };
}

/**
 * Every role tries every action. Answers as a table of `2xx` or the status, beside the table expected from each
 * action's roles; a 403 must be `role_forbids` and leave `state` as it was.
 */
export async function tryEveryRole(
  actions: Record<string, RoleAction>,
  people: Record<OrganisationRole, TeamMember>,
  state: () => Promise<unknown>,
): Promise<{ expected: Record<string, Record<string, string>>; answered: Record<string, Record<string, string>> }> {
  const expected: Record<string, Record<string, string>> = {};
  const answered: Record<string, Record<string, string>> = {};
  for (const [name, action] of Object.entries(actions)) {
    expected[name] = {};
    answered[name] = {};
    for (const role of ORGANISATION_ROLES) {
      expected[name][role] = action.allowed.includes(role) ? '2xx' : '403';
      const before = await state();
      const reply = await action.call(people[role], role);
      const outcome = reply.status >= 200 && reply.status < 300 ? '2xx' : String(reply.status);
      answered[name][role] = outcome;
      if (outcome === '403') {
        expect(reply.json.error.code, `${role}: ${name}`).toBe('role_forbids');
        expect(await state(), `${role} may not ${name}: nothing changed`).toEqual(before);
      }
    }
  }
  return { expected, answered };
}
