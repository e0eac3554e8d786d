/**
 * Members and invitations on both databases: the last-owner guard (sequential and two owners demoting each other
 * at once), who may touch owners, and invitations that join exactly once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresBackend, sqliteBackend, type TestDatabase } from '../../test/helpers/storage-backends.js';
import type { OrganisationRole } from './organisation-types.js';
import type { Storage } from './types.js';

const NOW = 1_800_000_000_000;

describe.each([sqliteBackend, postgresBackend])('organisation members on $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function person(): Promise<{ id: string; email: string }> {
    const id = `acct-${randomUUID()}`;
    const email = `Person.${id}@Example.com`;
    await storage.accounts.create({ id, email, passwordHash: 'x', role: 'user', tier: 'standard', createdAt: NOW });
    return { id, email };
  }

  /** An organisation owned by a fresh person, with further members in the given roles. */
  async function organisation(...roles: OrganisationRole[]) {
    const owner = await person();
    const id = `org_${randomUUID().replaceAll('-', '')}`;
    await storage.organisations.create(
      { id, name: 'Team', billingName: null, billingAddress: null, createdAt: NOW },
      owner.id,
    );
    const members: string[] = [];
    for (const role of roles) {
      const member = await person();
      const tokenHash = randomUUID();
      await storage.organisationInvitations.create({
        id: `inv_${randomUUID()}`,
        tokenHash,
        organisationId: id,
        email: member.email,
        role,
        invitedBy: owner.id,
        createdAt: NOW,
        expiresAt: NOW + 1000,
      });
      const accepted = await storage.organisationInvitations.accept(
        tokenHash,
        member.id,
        member.email.toLowerCase(),
        NOW,
      );
      expect(accepted.kind).toBe('joined');
      members.push(member.id);
    }
    return { id, owner: owner.id, members };
  }

  const roleOf = async (organisationId: string, accountId: string) =>
    (await storage.organisations.membership(organisationId, accountId))?.role ?? null;

  it('refuses to demote or remove the last owner, and allows it once another owner exists', async () => {
    const team = await organisation('admin');
    expect(await storage.organisations.changeRole(team.id, team.owner, 'admin', true)).toEqual({ kind: 'last_owner' });
    expect(await storage.organisations.removeMember(team.id, team.owner, true, NOW)).toEqual({ kind: 'last_owner' });
    expect(await roleOf(team.id, team.owner)).toBe('owner');

    const admin = team.members[0]!;
    expect(await storage.organisations.changeRole(team.id, admin, 'owner', true)).toEqual({
      kind: 'changed',
      previousRole: 'admin',
      revokedKeyIds: [],
    });
    expect(await storage.organisations.removeMember(team.id, team.owner, true, NOW)).toEqual({
      kind: 'changed',
      previousRole: 'owner',
      revokedKeyIds: [],
    });
    expect(await roleOf(team.id, team.owner)).toBeNull();
    expect(await roleOf(team.id, admin)).toBe('owner');
  });

  it('lets exactly one of two owners demoting each other at once succeed', async () => {
    for (let round = 0; round < 5; round++) {
      const team = await organisation('owner');
      const [a, b] = [team.owner, team.members[0]!];
      const results = await Promise.all([
        storage.organisations.changeRole(team.id, a, 'viewer', true),
        storage.organisations.changeRole(team.id, b, 'viewer', true),
      ]);
      expect(results.map((result) => result.kind).sort()).toEqual(['changed', 'last_owner']);
      const roles = [await roleOf(team.id, a), await roleOf(team.id, b)].sort();
      expect(roles).toEqual(['owner', 'viewer']);
    }
  });

  it('refuses owner changes to a caller that may not touch owners', async () => {
    const team = await organisation('developer', 'owner');
    const [developer, secondOwner] = team.members as [string, string];
    expect(await storage.organisations.changeRole(team.id, developer, 'owner', false)).toEqual({ kind: 'owner_only' });
    expect(await storage.organisations.changeRole(team.id, secondOwner, 'viewer', false)).toEqual({
      kind: 'owner_only',
    });
    expect(await storage.organisations.removeMember(team.id, secondOwner, false, NOW)).toEqual({ kind: 'owner_only' });
    expect(await storage.organisations.changeRole(team.id, developer, 'billing', false)).toMatchObject({
      kind: 'changed',
    });
    expect(await storage.organisations.removeMember(team.id, 'acct-nobody', true, NOW)).toEqual({
      kind: 'not_member',
    });
    expect([await roleOf(team.id, developer), await roleOf(team.id, secondOwner)]).toEqual(['billing', 'owner']);
  });

  /** A key of the organisation made by `createdBy` (null: the operator). */
  async function key(organisationId: string, createdBy: string | null): Promise<string> {
    const id = `key_${randomUUID()}`;
    await storage.apiKeys.create({
      id,
      accountId: organisationId,
      createdBy,
      name: 'k',
      keyHash: randomUUID(),
      hint: 'sk-tg-…',
      createdAt: NOW,
      expiresAt: null,
    });
    return id;
  }

  const revokedAt = async (organisationId: string, keyId: string) =>
    (await storage.apiKeys.findById(organisationId, keyId))?.revokedAt ?? null;

  it('revokes the keys a removed member made there in the removal itself, and nothing when refused', async () => {
    const team = await organisation('developer', 'owner');
    const [developer, secondOwner] = team.members as [string, string];
    const own = [await key(team.id, developer), await key(team.id, developer)];
    const alreadyRevoked = await key(team.id, developer);
    await storage.apiKeys.revoke(team.id, alreadyRevoked, NOW - 5);
    const others = [await key(team.id, team.owner), await key(team.id, null)];
    const elsewhere = await organisation();
    const developerElsewhere = await key(elsewhere.id, developer);

    // A refused removal (an admin may not remove an owner) changes no key either.
    const ownerKey = await key(team.id, secondOwner);
    expect(await storage.organisations.removeMember(team.id, secondOwner, false, NOW)).toEqual({ kind: 'owner_only' });
    expect(await revokedAt(team.id, ownerKey)).toBeNull();

    const removed = await storage.organisations.removeMember(team.id, developer, false, NOW + 7);
    expect(removed).toEqual({ kind: 'changed', previousRole: 'developer', revokedKeyIds: [...own].sort() });
    for (const id of own) expect(await revokedAt(team.id, id)).toBe(NOW + 7);
    expect(await revokedAt(team.id, alreadyRevoked)).toBe(NOW - 5);
    for (const id of others) expect(await revokedAt(team.id, id)).toBeNull();
    expect(await revokedAt(elsewhere.id, developerElsewhere)).toBeNull();
  });

  it('provisions a member from a provider and keeps only its own members in step with the claim', async () => {
    const team = await organisation('admin');
    const invitedAdmin = team.members[0]!;
    const newcomer = await person();
    const provision = (accountId: string, role: OrganisationRole) =>
      storage.organisations.provisionMember(team.id, accountId, role, 'acme', NOW + 1);

    expect(await provision(newcomer.id, 'developer')).toEqual({ kind: 'added', role: 'developer' });
    expect(await provision(newcomer.id, 'developer')).toEqual({ kind: 'unchanged', role: 'developer' });
    expect(await provision(newcomer.id, 'admin')).toEqual({
      kind: 'role_changed',
      previousRole: 'developer',
      role: 'admin',
    });
    // Invited by hand: the claim does not rule its role.
    expect(await provision(invitedAdmin, 'viewer')).toEqual({ kind: 'unchanged', role: 'admin' });
    expect(await roleOf(team.id, invitedAdmin)).toBe('admin');
    // Another provider's claim does not rule a member this one added.
    expect(await storage.organisations.provisionMember(team.id, newcomer.id, 'viewer', 'other', NOW)).toEqual({
      kind: 'unchanged',
      role: 'admin',
    });
    expect(await storage.organisations.provisionMember('org_none', newcomer.id, 'viewer', 'acme', NOW)).toBeNull();

    // A provisioned sole owner is never demoted by a claim.
    const solo = await organisation();
    const lone = await person();
    await storage.organisations.provisionMember(solo.id, lone.id, 'owner', 'acme', NOW);
    await storage.organisations.removeMember(solo.id, solo.owner, true, NOW);
    expect(await storage.organisations.provisionMember(solo.id, lone.id, 'viewer', 'acme', NOW)).toEqual({
      kind: 'last_owner',
      role: 'owner',
    });
    const members = await storage.organisations.members(team.id);
    expect(members.find((member) => member.accountId === newcomer.id)).toMatchObject({
      provisionedBy: 'acme',
      role: 'admin',
      signIn: { totp: false, passkeys: 0, ssoProviders: [] },
    });
  });

  it('stores the sign-in policy and reads it with the membership and the session', async () => {
    const team = await organisation();
    expect((await storage.organisations.findById(team.id))?.signInPolicy).toEqual({
      requireSecondFactor: false,
      requiredSsoProviders: [],
    });
    const policy = { requireSecondFactor: true, requiredSsoProviders: ['acme', 'okta'] };
    expect(await storage.organisations.setSignInPolicy(team.id, policy)).toBe(true);
    expect(await storage.organisations.setSignInPolicy('org_none', policy)).toBe(false);
    expect((await storage.organisations.membership(team.id, team.owner))?.organisation.signInPolicy).toEqual(policy);
    const idHash = randomUUID();
    await storage.sessions.create({
      idHash,
      accountId: team.owner,
      createdAt: NOW,
      lastSeenAt: NOW,
      organisationId: team.id,
      signInMethod: 'sso',
      ssoProvider: 'acme',
    });
    const found = await storage.sessions.findWithAccount(idHash);
    expect(found?.session).toMatchObject({ signInMethod: 'sso', ssoProvider: 'acme' });
    expect(found?.membership?.organisation.signInPolicy).toEqual(policy);
    await storage.sessions.setSignInMethod(idHash, 'second_factor');
    expect((await storage.sessions.findWithAccount(idHash))?.session.signInMethod).toBe('second_factor');
  });

  it('names the organisations a person alone owns with others in them', async () => {
    const alone = await organisation();
    const withOthers = await organisation('viewer');
    const sharedOwnership = await organisation('owner');
    const owner = withOthers.owner;
    expect(await storage.organisations.soleOwnerships(owner)).toEqual([{ id: withOthers.id, name: 'Team' }]);
    expect(await storage.organisations.soleOwnerships(alone.owner)).toEqual([]);
    expect(await storage.organisations.soleOwnerships(sharedOwnership.owner)).toEqual([]);
  });

  it('accepts an invitation once, for its address only, and not after revocation or expiry', async () => {
    const team = await organisation();
    const invitee = await person();
    const invite = async (expiresAt = NOW + 1000) => {
      const tokenHash = randomUUID();
      const invitation = await storage.organisationInvitations.create({
        id: `inv_${randomUUID()}`,
        tokenHash,
        organisationId: team.id,
        email: invitee.email,
        role: 'developer',
        invitedBy: team.owner,
        createdAt: NOW,
        expiresAt,
      });
      return { tokenHash, invitation };
    };
    const accept = (tokenHash: string, email = invitee.email.toLowerCase()) =>
      storage.organisationInvitations.accept(tokenHash, invitee.id, email, NOW + 10);

    const expired = await invite(NOW);
    expect(await accept(expired.tokenHash)).toEqual({ kind: 'expired' });
    const revoked = await invite();
    expect(await storage.organisationInvitations.revoke(team.id, revoked.invitation.id, NOW)).toBe(true);
    expect(await storage.organisationInvitations.revoke(team.id, revoked.invitation.id, NOW)).toBe(false);
    expect(await accept(revoked.tokenHash)).toEqual({ kind: 'revoked' });
    expect(await accept('no-such-hash')).toEqual({ kind: 'invalid' });

    const good = await invite();
    expect(await accept(good.tokenHash, 'someone.else@example.com')).toEqual({ kind: 'other_email' });
    expect((await storage.organisationInvitations.pending(team.id, NOW)).map((entry) => entry.id)).toEqual([
      good.invitation.id,
    ]);
    const both = await Promise.all([accept(good.tokenHash), accept(good.tokenHash)]);
    expect(both.map((result) => result.kind).sort()).toEqual(['joined', 'used']);
    expect(await roleOf(team.id, invitee.id)).toBe('developer');
    expect(await storage.organisationInvitations.pending(team.id, NOW)).toEqual([]);
    const found = await storage.organisationInvitations.findByTokenHash(good.tokenHash);
    expect(found).toMatchObject({ organisationName: 'Team', acceptedBy: invitee.id, acceptedAt: NOW + 10 });

    const again = await invite();
    expect(await accept(again.tokenHash)).toEqual({ kind: 'already_member' });
    expect((await storage.organisationInvitations.findByTokenHash(again.tokenHash))?.acceptedAt).toBeNull();
  });
});
