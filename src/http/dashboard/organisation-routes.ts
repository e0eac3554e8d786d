import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { presentMembership } from './presenters.js';

const createBody = z.object({ name: z.string() }).strict();
const switchBody = z.object({ organisationId: z.string().min(1).max(200) }).strict();

/** The person's organisations: list, create, and switch the one the session works in. */
export function registerOrganisationRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/organisations', async (request) => {
    const memberships = await deps.organisations.list(currentAccount(request).id);
    const session = request.dashboard!.session!;
    return {
      current: session.membership === null ? null : presentMembership(session.membership),
      organisations: memberships.map(presentMembership),
    };
  });

  api.post('/organisations', async (request, reply) => {
    const { name } = parseInput(createBody, request.body);
    const organisation = await deps.organisations.create(currentAccount(request).id, name);
    const membership = { organisation, role: 'owner' as const, joinedAt: organisation.createdAt };
    return reply.code(201).send({ organisation: presentMembership(membership) });
  });

  api.post('/organisations/current', async (request) => {
    const { organisationId } = parseInput(switchBody, request.body);
    const session = request.dashboard!.session!;
    const membership = await deps.organisations.switchTo(session.account.id, session.session.idHash, organisationId);
    return { organisation: presentMembership(membership) };
  });

  api.get('/organisation', { config: { permission: 'organisation:read' } }, async (request) => ({
    organisation: presentMembership(currentOrganisation(request)),
  }));
}
