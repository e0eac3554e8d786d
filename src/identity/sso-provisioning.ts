import type { AuditLog } from '../accounts/audit/audit-log.js';
import type { SsoProviderSettings } from '../config/sso-settings.js';
import {
  ORGANISATION_ROLES,
  type OrganisationRepository,
  type OrganisationRole,
  type ProvisionOutcome,
} from '../storage/organisation-types.js';
import type { AccountRecord } from '../storage/types.js';

export interface ProvisionedMembership {
  organisationId: string;
  outcome: ProvisionOutcome;
}

/**
 * Membership from single sign-on: a provider with `provisioning` adds the person to the organisation their email's
 * domain names (or its default organisation) with the role its claim maps to, at every sign-in. The claim keeps
 * ruling the role of members the provider added (promoted or demoted at the next sign-in, as the identity
 * provider's groups change), never of members who joined otherwise, and never leaves an organisation without an
 * owner. Each change is in the organisation's audit log.
 */
export class SsoProvisioning {
  constructor(
    private readonly organisations: Pick<OrganisationRepository, 'provisionMember'>,
    private readonly audit: AuditLog | undefined,
    private readonly now: () => number,
    private readonly log: (message: string, details: Record<string, unknown>) => void = () => undefined,
  ) {}

  async provision(
    provider: SsoProviderSettings,
    account: AccountRecord,
    claims: Readonly<Record<string, unknown>>,
  ): Promise<ProvisionedMembership[]> {
    const settings = provider.provisioning;
    if (settings === undefined) return [];
    const organisationId = targetOrganisation(provider, account.email);
    if (organisationId === undefined) return [];
    const role = mappedRole(provider, claims);
    const outcome = await this.organisations.provisionMember(organisationId, account.id, role, provider.id, this.now());
    if (outcome === null) {
      // A configuration naming an organisation that does not exist: the sign-in goes on, the operator is told.
      this.log('SSO provisioning names no existing organisation', { provider: provider.id, organisationId });
      return [];
    }
    if (outcome.kind === 'added' || outcome.kind === 'role_changed') {
      await this.audit?.record({
        organisationId,
        actor: { type: 'system', name: `sso:${provider.id}` },
        ip: null,
        action: outcome.kind === 'added' ? 'member.provision' : 'member.role',
        target: { type: 'member', id: account.id },
        before: outcome.kind === 'added' ? null : { email: account.email, role: outcome.previousRole },
        after: { email: account.email, role: outcome.role },
      });
    }
    return [{ organisationId, outcome }];
  }
}

/** The organisation a provider provisions this email into: its domain's, else the provider's default. */
export function targetOrganisation(provider: SsoProviderSettings, email: string): string | undefined {
  const settings = provider.provisioning;
  if (settings === undefined) return undefined;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const byDomain = Object.entries(settings.domains).find(([rule]) => rule.toLowerCase() === domain)?.[1];
  return byDomain ?? settings.organisation;
}

/** Every organisation the provider may provision into (where its refused sign-ins are recorded). */
export function provisioningOrganisations(provider: SsoProviderSettings): string[] {
  const settings = provider.provisioning;
  if (settings === undefined) return [];
  const ids = [
    ...Object.values(settings.domains),
    ...(settings.organisation === undefined ? [] : [settings.organisation]),
  ];
  return [...new Set(ids)];
}

/**
 * The role the claim maps to: of the claim's values (a string or a list) that `roles` names, the one that may do
 * most (owner first); the default role when none does or no claim is configured.
 */
export function mappedRole(provider: SsoProviderSettings, claims: Readonly<Record<string, unknown>>): OrganisationRole {
  const settings = provider.provisioning;
  if (settings === undefined) return 'developer';
  if (settings.roleClaim === undefined) return settings.defaultRole;
  const value = claims[settings.roleClaim];
  const values = (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string');
  const roles = values.flatMap((item) => {
    const role = Object.hasOwn(settings.roles, item) ? settings.roles[item] : undefined;
    return role === undefined ? [] : [role];
  });
  if (roles.length === 0) return settings.defaultRole;
  return [...roles].sort((a, b) => ORGANISATION_ROLES.indexOf(a) - ORGANISATION_ROLES.indexOf(b))[0]!;
}
