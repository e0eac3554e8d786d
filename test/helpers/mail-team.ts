/**
 * People joining an organisation the way they do when the gateway sends mail: they register, confirm their address
 * through the verification mail's link, and accept an invitation through the invitation mail's link.
 */
import { expect } from 'vitest';
import type { OrganisationRole } from '../../src/accounts/organisation-roles.js';
import type { MailCatcher } from './mail-catcher.js';
import { invitationToken, registeredPerson, type TeamMember } from './organisation-team.js';

/** The `token` query parameter of a mailed link. */
function tokenOf(link: string | undefined): string {
  if (link === undefined) throw new Error('The mail holds no link.');
  return invitationToken(link);
}

/** Registers a person and verifies their address through the verification mail. */
export async function verifiedPerson(mail: MailCatcher, baseUrl: string, prefix: string): Promise<TeamMember> {
  const person = await registeredPerson(baseUrl, prefix);
  await verifyByMail(mail, person);
  return person;
}

/** A person just registered: the first mail to them is the verification. */
async function verifyByMail(mail: MailCatcher, person: TeamMember): Promise<void> {
  const verification = await mail.next(person.email, 0);
  const verified = await person.client.post('/api/auth/verify-email', { token: tokenOf(verification.link) });
  expect(verified.status, verified.text).toBe(200);
}

/**
 * `inviter` invites a new address with `role` into their session's organisation; the invitation mail arrives, the
 * person registers with that address, verifies it and accepts through the mailed link. Their session then works in
 * the organisation.
 */
export async function joinedByMail(
  mail: MailCatcher,
  baseUrl: string,
  inviter: TeamMember,
  role: OrganisationRole,
): Promise<TeamMember & { invitationId: string }> {
  const person = await registeredPerson(baseUrl, role);
  await verifyByMail(mail, person);
  const since = mail.to(person.email).length;
  const invited = await inviter.client.post('/api/organisation/invitations', { email: person.email, role });
  expect(invited.status, invited.text).toBe(201);
  expect(invited.json).toMatchObject({ mailed: true, link: null });
  const invitation = await mail.next(person.email, since);
  expect(invitation.subject).toMatch(/^You are invited to /);
  expect(invitation.text).toContain(inviter.email);
  const accepted = await person.client.post('/api/invitations/accept', { token: tokenOf(invitation.link) });
  expect(accepted.status, accepted.text).toBe(200);
  expect(accepted.json.organisation.role).toBe(role);
  return { ...person, invitationId: invited.json.invitation.id as string };
}
