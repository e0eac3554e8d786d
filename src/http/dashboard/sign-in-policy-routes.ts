import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { OrganisationSignInPolicy } from '../../storage/organisation-types.js';
import { parseInput } from './body-parsing.js';
import { byPerson } from './audit-actor.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { DashboardError, ownerOnlySetting } from './dashboard-error.js';
import { currentOrganisation } from './dashboard-session.js';

const policyBody = z
  .object({
    requireSecondFactor: z.boolean(),
    requiredSsoProviders: z.array(z.string().max(40)).max(20),
  })
  .strict();

/**
 * The organisation's sign-in policy (docs/organisations.md): every member reads it, only an owner changes it. An
 * owner cannot switch on a rule their own session does not meet, so no one locks the organisation out by it.
 */
export function registerSignInPolicyRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  const providers = () => deps.signInMethods.sso.list();

  api.get('/organisation/sign-in-policy', { config: { permission: 'organisation:read' } }, async (request) => ({
    policy: presentPolicy(currentOrganisation(request).organisation.signInPolicy),
    providers: providers(),
  }));

  api.put('/organisation/sign-in-policy', { config: { permission: 'organisation:manage' } }, async (request) => {
    const body = parseInput(policyBody, request.body);
    const membership = currentOrganisation(request);
    if (membership.role !== 'owner') throw ownerOnlySetting();
    const known = new Set(providers().map((provider) => provider.id));
    const unknown = body.requiredSsoProviders.find((id) => !known.has(id));
    if (unknown !== undefined)
      throw new DashboardError(
        400,
        'invalid_request',
        `No sign-in provider '${unknown}' is configured on this gateway.`,
        'requiredSsoProviders',
      );
    const session = request.dashboard!.session!;
    const method = session.session.signInMethod ?? 'password';
    const policy: OrganisationSignInPolicy = {
      requireSecondFactor: body.requireSecondFactor,
      requiredSsoProviders: [...new Set(body.requiredSsoProviders)].sort(),
    };
    if (policy.requireSecondFactor) {
      if ((await deps.signInMethods.secondFactors(session.account.id)).length === 0)
        throw new DashboardError(
          400,
          'second_factor_needed',
          'Set up an authenticator app or a passkey for yourself first: members will need one too.',
          'requireSecondFactor',
        );
      if (method === 'password')
        throw new DashboardError(
          400,
          'second_factor_needed',
          'This session was started with a password alone: sign in again with your second factor, then turn this on.',
          'requireSecondFactor',
        );
    }
    if (
      policy.requiredSsoProviders.length > 0 &&
      (method !== 'sso' || !policy.requiredSsoProviders.includes(session.session.ssoProvider ?? ''))
    )
      throw new DashboardError(
        400,
        'sso_session_needed',
        'Sign in through one of these providers yourself first, then require it: otherwise this session would be shut out.',
        'requiredSsoProviders',
      );
    const before = membership.organisation.signInPolicy;
    await deps.organisations.setSignInPolicy(membership.organisation.id, policy);
    await deps.audit.record({
      organisationId: membership.organisation.id,
      ...byPerson(request),
      action: 'organisation.sign_in_policy',
      target: { type: 'organisation', id: membership.organisation.id },
      before: presentPolicy(before),
      after: presentPolicy(policy),
    });
    return { policy: presentPolicy(policy), providers: providers() };
  });
}

function presentPolicy(policy: OrganisationSignInPolicy) {
  return { requireSecondFactor: policy.requireSecondFactor, requiredSsoProviders: [...policy.requiredSsoProviders] };
}
