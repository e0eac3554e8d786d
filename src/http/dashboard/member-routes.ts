import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ORGANISATION_ROLES } from '../../accounts/organisation-roles.js';
import type { OrganisationMember } from '../../storage/organisation-types.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { byPerson } from './audit-actor.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { presentMembership } from './presenters.js';

const roleBody = z.object({ role: z.enum(ORGANISATION_ROLES) }).strict();

type MemberParams = { Params: { accountId: string } };

/** The members of the session's organisation: list, change a role, remove, and leave. */
export function registerMemberRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/organisation/members', { config: { permission: 'organisation:read' } }, async (request) => {
    const membership = currentOrganisation(request);
    const members = await deps.members.list(membership.organisation.id);
    const you = currentAccount(request).id;
    return { members: members.map((member) => presentMember(member, you)) };
  });

  api.patch<MemberParams>(
    '/organisation/members/:accountId',
    { config: { permission: 'members:manage' } },
    async (request) => {
      const { role } = parseInput(roleBody, request.body);
      const membership = currentOrganisation(request);
      const organisationId = membership.organisation.id;
      const before = (await deps.members.list(organisationId)).find(
        (entry) => entry.accountId === request.params.accountId,
      );
      await deps.members.changeRole(membership, request.params.accountId, role);
      const members = await deps.members.list(organisationId);
      const member = members.find((entry) => entry.accountId === request.params.accountId);
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'member.role',
        target: { type: 'member', id: request.params.accountId },
        before: before === undefined ? null : { email: before.email, role: before.role },
        after: member === undefined ? null : { email: member.email, role: member.role },
      });
      return { member: member === undefined ? null : presentMember(member, currentAccount(request).id) };
    },
  );

  api.delete<MemberParams>(
    '/organisation/members/:accountId',
    { config: { permission: 'members:manage' } },
    async (request) => {
      const membership = currentOrganisation(request);
      const organisationId = membership.organisation.id;
      const before = (await deps.members.list(organisationId)).find(
        (entry) => entry.accountId === request.params.accountId,
      );
      const revokedKeyIds = await deps.members.remove(membership, request.params.accountId);
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'member.remove',
        target: { type: 'member', id: request.params.accountId },
        before: before === undefined ? null : { email: before.email, role: before.role },
        after: { revokedKeyIds },
      });
      return { removed: request.params.accountId, revokedKeyIds };
    },
  );

  // Every member may leave (the last owner may not); the session moves on to the person's next organisation.
  api.post('/organisation/leave', { config: { permission: 'organisation:read' } }, async (request) => {
    const session = request.dashboard!.session!;
    const left = currentOrganisation(request);
    const next = await deps.members.leave(left, session.account.id, session.session.idHash);
    await deps.audit.record({
      organisationId: left.organisation.id,
      ...byPerson(request),
      action: 'member.leave',
      target: { type: 'member', id: session.account.id },
      before: { email: session.account.email, role: left.role },
    });
    return { organisation: next === null ? null : presentMembership(next) };
  });
}

function presentMember(member: OrganisationMember, you: string) {
  return {
    accountId: member.accountId,
    email: member.email,
    role: member.role,
    joinedAt: member.joinedAt,
    you: member.accountId === you,
    provisionedBy: member.provisionedBy,
    // How the person can sign in: whether an organisation requiring a second factor would let them in.
    signIn: {
      totp: member.signIn.totp,
      passkeys: member.signIn.passkeys,
      ssoProviders: member.signIn.ssoProviders,
      secondFactor: member.signIn.totp || member.signIn.passkeys > 0,
    },
  };
}
