import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, PASSWORD } from '../helpers/dashboard-client.js';
import { startMailCatcher, type CaughtMail, type MailCatcher } from '../helpers/mail-catcher.js';
import { invitationToken, join as joinTeam, registeredPerson, type TeamMember } from '../helpers/organisation-team.js';
import { spawnGateway, startTestGateway, stopProcess, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Invitations, the last-owner guard and removal through the shipped gateway on PostgreSQL with real SMTP, plus a
 * second gateway process on the same database for what a removal does on another instance; and a gateway without
 * mail (the link in the reply) on a fake clock for expiry.
 */

const PUBLIC_BASE_URL = 'http://tollgate.test';

describe('members and invitations on PostgreSQL with mail', () => {
  let harness: TestGateway;
  let mail: MailCatcher;
  let second: { child: ChildProcess; url: string };
  let secondJournal: string;

  beforeAll(async () => {
    mail = await startMailCatcher();
    harness = await startTestGateway({
      postgres: true,
      env: { SMTP_URL: mail.url, MAIL_FROM: 'Tollgate <noreply@tollgate.test>', PUBLIC_BASE_URL },
    });
    // Another instance on the same database, as behind a load balancer: its own settlement journal.
    secondJournal = mkdtempSync(join(tmpdir(), 'tollgate-second-'));
    second = await spawnGateway({ ...harness.env, SETTLEMENT_JOURNAL_DIR: secondJournal });
  }, 120_000);

  afterAll(async () => {
    if (second !== undefined) await stopProcess(second.child);
    await harness?.close();
    await mail?.close();
    if (secondJournal !== undefined) rmSync(secondJournal, { recursive: true, force: true });
  });

  const tokenOf = (caught: CaughtMail) => {
    expect(caught.link?.startsWith(`${PUBLIC_BASE_URL}/`)).toBe(true);
    return invitationToken(caught.link!);
  };

  /** Registered and verified through the verification mail's link. */
  async function verifiedPerson(prefix: string, baseUrl = harness.gateway.url): Promise<TeamMember> {
    const person = await registeredPerson(baseUrl, prefix);
    const verification = await mail.next(person.email, 0);
    const verifyToken = new URL(verification.link!).searchParams.get('token')!;
    expect((await person.client.post('/api/auth/verify-email', { token: verifyToken })).status).toBe(200);
    return person;
  }

  const membersOf = async (organisationId: string) =>
    (await harness.gateway.storage.organisations.members(organisationId)).map((member) => [
      member.accountId,
      member.role,
    ]);

  /** Invites by mail as `inviter` and accepts as `person`. */
  async function joinByMail(inviter: TeamMember, person: TeamMember, role: string): Promise<void> {
    const since = mail.to(person.email).length;
    expect((await inviter.client.post('/api/organisation/invitations', { email: person.email, role })).status).toBe(
      201,
    );
    const token = tokenOf(await mail.next(person.email, since));
    expect((await person.client.post('/api/invitations/accept', { token })).status).toBe(200);
  }

  it('mails an invitation; the invited person previews it signed out, registers, verifies, accepts once', async () => {
    const owner = await verifiedPerson('owner');
    const team = await owner.client.post('/api/organisations', { name: 'Mail Team' });
    const organisationId = team.json.organisation.id as string;
    expect((await owner.client.post('/api/organisations/current', { organisationId })).status).toBe(200);

    const email = `Invited.${Date.now()}@Example.com`;
    const invited = await owner.client.post('/api/organisation/invitations', { email, role: 'developer' });
    expect(invited.status).toBe(201);
    expect(invited.json).toMatchObject({ mailed: true, link: null, invitation: { email, role: 'developer' } });
    const letter = await mail.next(email, 0);
    expect(letter.subject).toBe('You are invited to Mail Team on Tollgate');
    expect(letter.text).toContain(owner.email);
    const token = tokenOf(letter);
    expect(letter.link).toBe(`${PUBLIC_BASE_URL}/accept-invitation?token=${token}`);
    const pending = await owner.client.get('/api/organisation/invitations');
    expect(pending.json.invitations).toEqual([expect.objectContaining({ email, role: 'developer' })]);

    const visitor = new DashboardClient(harness.gateway.url);
    await visitor.open();
    const preview = await visitor.post('/api/invitations/preview', { token });
    expect(preview.status).toBe(200);
    expect(preview.json.invitation).toMatchObject({ organisationName: 'Mail Team', role: 'developer', email });
    expect((await visitor.post('/api/invitations/accept', { token })).status).toBe(401);

    // Registering with the invited address (other case) is not proof of it: the verification mail is.
    const registered = await visitor.register(email.toLowerCase(), PASSWORD);
    expect(registered.status).toBe(201);
    const unverified = await visitor.post('/api/invitations/accept', { token });
    expect(unverified.status).toBe(403);
    expect(unverified.json.error.code).toBe('email_unverified');
    expect(await membersOf(organisationId)).toHaveLength(1);
    const verification = await mail.next(email, 1);
    const verifyToken = new URL(verification.link!).searchParams.get('token')!;
    expect((await visitor.post('/api/auth/verify-email', { token: verifyToken })).status).toBe(200);

    const accepted = await visitor.post('/api/invitations/accept', { token });
    expect(accepted.status).toBe(200);
    expect(accepted.json.organisation).toMatchObject({ id: organisationId, name: 'Mail Team', role: 'developer' });
    expect((await visitor.get('/api/organisation')).json.organisation.id).toBe(organisationId);
    const switcher = (await visitor.get('/api/organisations')).json.organisations.map((o: { id: string }) => o.id);
    expect(switcher).toContain(organisationId);
    expect((await owner.client.get('/api/organisation/invitations')).json.invitations).toEqual([]);

    const members = await membersOf(organisationId);
    const again = await visitor.post('/api/invitations/accept', { token });
    expect(again.status).toBe(400);
    expect(again.json.error).toMatchObject({ code: 'link_used', field: 'token' });
    expect((await visitor.post('/api/invitations/preview', { token })).json.error.code).toBe('link_used');
    expect(await membersOf(organisationId)).toEqual(members);
  });

  it('refuses a link for another address, a withdrawn one and a made-up one, changing nothing', async () => {
    const owner = await verifiedPerson('owner');
    const intended = `intended.${Date.now()}@example.com`;
    expect((await owner.client.post('/api/organisation/invitations', { email: intended, role: 'viewer' })).status).toBe(
      201,
    );
    const token = tokenOf(await mail.next(intended, 0));
    const stranger = await verifiedPerson('stranger');
    const other = await stranger.client.post('/api/invitations/accept', { token });
    expect(other.status).toBe(403);
    expect(other.json.error.code).toBe('other_email');
    expect(await membersOf(owner.accountId)).toHaveLength(1);
    expect((await owner.client.get('/api/organisation/invitations')).json.invitations).toHaveLength(1);

    const invitationId = (await owner.client.get('/api/organisation/invitations')).json.invitations[0].id as string;
    expect((await owner.client.post(`/api/organisation/invitations/${invitationId}/revoke`)).status).toBe(200);
    expect((await owner.client.post(`/api/organisation/invitations/${invitationId}/revoke`)).status).toBe(404);
    const intendedPerson = new DashboardClient(harness.gateway.url);
    expect((await intendedPerson.register(intended, PASSWORD)).status).toBe(201);
    const withdrawn = await intendedPerson.post('/api/invitations/accept', { token });
    expect(withdrawn.status).toBe(400);
    expect(withdrawn.json.error.code).toBe('invitation_revoked');

    const flipped = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of ['x'.repeat(43), 'short', flipped]) {
      const reply = await stranger.client.post('/api/invitations/accept', { token: bad });
      expect(reply.status).toBe(400);
      expect(reply.json.error.code).toBe('invalid_link');
    }
    expect(await membersOf(owner.accountId)).toHaveLength(1);
    const badEmail = await owner.client.post('/api/organisation/invitations', {
      email: 'not-an-address',
      role: 'viewer',
    });
    expect(badEmail.status).toBe(400);
    expect(badEmail.json.error.field).toBe('email');
  });

  it('keeps an owner: the last one cannot leave, be demoted or removed; of two demoting each other one wins', async () => {
    const owner = await verifiedPerson('owner');
    const alone = await owner.client.post('/api/organisation/leave');
    expect(alone.status).toBe(409);
    expect(alone.json.error.code).toBe('last_owner');
    const self = await owner.client.call('PATCH', `/api/organisation/members/${owner.accountId}`, { role: 'admin' });
    expect(self.json.error.code).toBe('last_owner');

    for (let round = 0; round < 3; round++) {
      const co = await verifiedPerson('co-owner');
      await joinByMail(owner, co, 'owner');
      const [first, secondReply] = await Promise.all([
        owner.client.call('PATCH', `/api/organisation/members/${co.accountId}`, { role: 'viewer' }),
        co.client.call('PATCH', `/api/organisation/members/${owner.accountId}`, { role: 'viewer' }),
      ]);
      const statuses = [first.status, secondReply.status].sort();
      expect(statuses[0]).toBe(200);
      // The loser finds itself the last owner (409), or is no owner at all any more when the winner's change landed
      // before its own request was authorised (403).
      expect([403, 409]).toContain(statuses[1]);
      const owners = (await membersOf(owner.accountId)).filter(([, role]) => role === 'owner');
      expect(owners).toHaveLength(1);
      // Hand the organisation back to the first owner for the next round, and let the other go.
      if (owners[0]![0] !== owner.accountId) {
        await co.client.call('PATCH', `/api/organisation/members/${owner.accountId}`, { role: 'owner' });
      }
      expect((await owner.client.call('DELETE', `/api/organisation/members/${co.accountId}`)).status).toBe(200);
    }
  });

  it('refuses deleting the only owner of an organisation with other members until they hand it over', async () => {
    const owner = await verifiedPerson('owner');
    const viewer = await verifiedPerson('viewer');
    await joinByMail(owner, viewer, 'viewer');
    const refused = await owner.client.post('/api/account/delete', { password: PASSWORD });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('deletion_refused');
    expect(refused.json.error.message).toContain('"Personal"');
    expect((await owner.client.get('/api/organisation')).status).toBe(200);
    const key = (await owner.client.post('/api/keys', { name: 'owner key' })).json.key.id as string;
    await owner.client.call('PATCH', `/api/organisation/members/${viewer.accountId}`, { role: 'owner' });
    expect((await owner.client.post('/api/account/delete', { password: PASSWORD })).status).toBe(200);
    // The deleted person leaves the organisation, and no key they made there outlives them.
    expect(await membersOf(owner.accountId)).toEqual([[viewer.accountId, 'owner']]);
    expect((await harness.gateway.storage.apiKeys.findById(owner.accountId, key))?.revokedAt).not.toBeNull();
  });

  it("ends a removed member's access on another instance at their next request and revokes their keys", async () => {
    const owner = await verifiedPerson('owner');
    // The member works on the second instance, in two sessions.
    const member = await verifiedPerson('member', second.url);
    const otherSession = new DashboardClient(second.url);
    await joinByMail(owner, member, 'developer');
    expect((await otherSession.login(member.email, PASSWORD)).status).toBe(200);
    expect((await otherSession.post('/api/organisations/current', { organisationId: owner.accountId })).status).toBe(
      200,
    );
    const made = await member.client.post('/api/keys', { name: 'member key' });
    expect(made.status).toBe(201);
    const memberKey = made.json.secret as string;
    const ownerKey = (await owner.client.post('/api/keys', { name: 'owner key' })).json.secret as string;
    const models = (key: string, url: string) =>
      fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect((await models(memberKey, second.url)).status).toBe(200);

    const removed = await owner.client.call('DELETE', `/api/organisation/members/${member.accountId}`);
    expect(removed.status).toBe(200);
    for (const client of [member.client, otherSession]) {
      const next = await client.get('/api/keys');
      expect(next.status).toBe(403);
      expect(next.json.error.code).toBe('membership_ended');
    }
    for (const url of [second.url, harness.gateway.url]) {
      const refused = await models(memberKey, url);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('revoked');
      expect((await models(ownerKey, url)).status).toBe(200);
    }
    // Choosing an organisation they still belong to gets them going again, in their own.
    expect((await member.client.post('/api/organisations/current', { organisationId: member.accountId })).status).toBe(
      200,
    );
    expect((await member.client.get('/api/keys')).status).toBe(200);
  });

  it('lets a member leave; their keys in that organisation are revoked', async () => {
    const owner = await verifiedPerson('owner');
    const member = await verifiedPerson('leaver');
    await joinByMail(owner, member, 'admin');
    const key = (await member.client.post('/api/keys', { name: 'leaver key' })).json.key.id as string;
    const left = await member.client.post('/api/organisation/leave');
    expect(left.status).toBe(200);
    expect(left.json.organisation.id).toBe(member.accountId);
    expect((await member.client.get('/api/organisation')).json.organisation.id).toBe(member.accountId);
    expect((await harness.gateway.storage.apiKeys.findById(owner.accountId, key))?.revokedAt).not.toBeNull();
    expect(await membersOf(owner.accountId)).toEqual([[owner.accountId, 'owner']]);
  });
});

describe('invitations without mail, on a fake clock', () => {
  const start = Date.parse('2026-03-02T10:00:00Z');
  let harness: TestGateway;

  beforeAll(async () => {
    harness = await startTestGateway({ fakeClockMs: start });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('returns the link to the inviter, and refuses it after seven days', async () => {
    const owner = await registeredPerson(harness.gateway.url, 'owner');
    const email = `late.${Date.now()}@example.com`;
    const invited = await owner.client.post('/api/organisation/invitations', { email, role: 'billing' });
    expect(invited.status).toBe(201);
    expect(invited.json.mailed).toBe(false);
    expect(invited.json.link).toEqual({
      path: expect.stringMatching(/^\/accept-invitation\?token=[\w-]{43}$/),
      url: null,
    });
    expect(invited.json.invitation.expiresAt).toBe(start + 7 * 86_400_000);
    const token = invitationToken(invited.json.link.path);

    harness.setClock(start + 7 * 86_400_000 + 1000);
    const late = new DashboardClient(harness.gateway.url);
    expect((await late.register(email, PASSWORD)).status).toBe(201);
    const expired = await late.post('/api/invitations/accept', { token });
    expect(expired.status).toBe(400);
    expect(expired.json.error.code).toBe('link_expired');
    expect((await late.post('/api/invitations/preview', { token })).json.error.code).toBe('link_expired');
    expect(await harness.gateway.storage.organisations.members(owner.accountId)).toHaveLength(1);
  });

  it('joins by the link in the reply within the seven days', async () => {
    harness.setClock(start + 10 * 86_400_000);
    const owner = await registeredPerson(harness.gateway.url, 'owner');
    const person = await registeredPerson(harness.gateway.url, 'person');
    await joinTeam(owner.client, person, 'viewer');
    expect((await person.client.get('/api/organisation')).json.organisation).toMatchObject({
      id: owner.accountId,
      role: 'viewer',
    });
  });
});
