/**
 * A team in one organisation for the members suites: an owner and a person in each other role, each joined by
 * accepting an invitation through the dashboard API of a gateway that sends no mail (the link comes in the reply).
 */
import { expect } from 'vitest';
import { ORGANISATION_ROLES, type OrganisationRole } from '../../src/accounts/organisation-roles.js';
import { DashboardClient, PASSWORD, uniqueEmail } from './dashboard-client.js';

export interface TeamMember {
  client: DashboardClient;
  accountId: string;
  email: string;
}

export interface Team {
  /** The owner's personal organisation: it shares their account id, so its money routes work today. */
  organisationId: string;
  members: Record<OrganisationRole, TeamMember>;
}

export async function registeredPerson(baseUrl: string, prefix = 'member'): Promise<TeamMember> {
  const client = new DashboardClient(baseUrl);
  const email = uniqueEmail(prefix);
  const reply = await client.register(email, PASSWORD);
  expect(reply.status).toBe(201);
  return { client, accountId: reply.json.account.id as string, email };
}

/** The token of an invitation link (`…/accept-invitation?token=…`). */
export function invitationToken(link: string): string {
  const token = new URL(link, 'http://link.invalid').searchParams.get('token');
  if (token === null) throw new Error(`No token in ${link}`);
  return token;
}

/** Invites `person` into the inviter's current organisation with `role`, and accepts as them. */
export async function join(inviter: DashboardClient, person: TeamMember, role: OrganisationRole): Promise<void> {
  const invited = await inviter.post('/api/organisation/invitations', { email: person.email, role });
  expect(invited.status).toBe(201);
  expect(invited.json.mailed).toBe(false);
  const accepted = await person.client.post('/api/invitations/accept', {
    token: invitationToken(invited.json.link.path),
  });
  expect(accepted.status).toBe(200);
  expect(accepted.json.organisation.role).toBe(role);
}

export async function team(baseUrl: string): Promise<Team> {
  const owner = await registeredPerson(baseUrl, 'owner');
  const members = { owner } as Record<OrganisationRole, TeamMember>;
  for (const role of ORGANISATION_ROLES) {
    if (role === 'owner') continue;
    members[role] = await registeredPerson(baseUrl, role);
    await join(owner.client, members[role], role);
  }
  return { organisationId: owner.accountId, members };
}
