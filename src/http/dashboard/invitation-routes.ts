import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ORGANISATION_ROLES } from '../../accounts/organisation-roles.js';
import type { InvitationRecord } from '../../storage/organisation-invitation-types.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { byPerson } from './audit-actor.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { presentMembership } from './presenters.js';

const inviteBody = z.object({ email: z.string().max(254), role: z.enum(ORGANISATION_ROLES) }).strict();
/** The token's own shape is checked by the service, which answers every bad link alike. */
const tokenBody = z.object({ token: z.string().max(200) }).strict();

const MANAGE = { config: { permission: 'members:manage' } } as const;

/**
 * Invitations: the session's organisation invites, lists and withdraws them (`members:manage`); the invited person
 * previews a link (signed out too) and accepts it signed in.
 */
export function registerInvitationRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/organisation/invitations', MANAGE, async (request) => {
    const pending = await deps.invitations.pending(currentOrganisation(request).organisation.id);
    return { invitations: pending.map(presentInvitation) };
  });

  api.post('/organisation/invitations', MANAGE, async (request, reply) => {
    const { email, role } = parseInput(inviteBody, request.body);
    const membership = currentOrganisation(request);
    const sent = await deps.invitations.invite(membership, currentAccount(request), email, role);
    await deps.audit.record({
      organisationId: membership.organisation.id,
      ...byPerson(request),
      action: 'member.invite',
      target: { type: 'invitation', id: sent.invitation.id },
      after: { email: sent.invitation.email, role: sent.invitation.role, mailed: sent.mailed },
    });
    return reply.code(201).send({
      invitation: presentInvitation(sent.invitation),
      mailed: sent.mailed,
      // Only when no mail went out: the inviter passes the link on.
      link: sent.link,
    });
  });

  api.post<{ Params: { id: string } }>('/organisation/invitations/:id/revoke', MANAGE, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    await deps.invitations.revoke(organisationId, request.params.id);
    await deps.audit.record({
      organisationId,
      ...byPerson(request),
      action: 'member.invite_revoke',
      target: { type: 'invitation', id: request.params.id },
    });
    return { revoked: request.params.id };
  });

  api.post('/invitations/preview', { config: { access: 'public' } }, async (request) => {
    const { token } = parseInput(tokenBody, request.body);
    const invitation = await deps.invitations.preview(token);
    return {
      invitation: {
        organisationName: invitation.organisationName,
        email: invitation.email,
        role: invitation.role,
        invitedByEmail: invitation.invitedByEmail,
        expiresAt: invitation.expiresAt,
      },
    };
  });

  // Accepting moves the session into the organisation joined.
  api.post('/invitations/accept', async (request) => {
    const { token } = parseInput(tokenBody, request.body);
    const session = request.dashboard!.session!;
    const invitation = await deps.invitations.accept(session.account, token);
    const membership = await deps.organisations.switchTo(
      session.account.id,
      session.session.idHash,
      invitation.organisationId,
    );
    await deps.audit.record({
      organisationId: invitation.organisationId,
      ...byPerson(request),
      action: 'member.join',
      target: { type: 'member', id: session.account.id },
      after: { email: session.account.email, role: membership.role },
    });
    return { organisation: presentMembership(membership) };
  });
}

function presentInvitation(invitation: InvitationRecord) {
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    createdAt: invitation.createdAt,
    expiresAt: invitation.expiresAt,
  };
}
