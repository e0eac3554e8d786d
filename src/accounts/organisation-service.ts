import { randomUUID } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import type {
  OrganisationSignInPolicy,
  Membership,
  OrganisationRecord,
  OrganisationRepository,
} from '../storage/organisation-types.js';

/** Longest organisation name: a label in the switcher and on receipts. */
export const ORGANISATION_NAME_MAX = 100;

/** Organisations a person belongs to, making new ones, and which one a dashboard session works in. */
export class OrganisationService {
  constructor(
    private readonly organisations: OrganisationRepository,
    private readonly now: () => number = Date.now,
  ) {}

  list(accountId: string): Promise<Membership[]> {
    return this.organisations.membershipsOf(accountId);
  }

  /** A new organisation with the person as its owner. */
  async create(ownerAccountId: string, name: string): Promise<OrganisationRecord> {
    return this.organisations.create(
      {
        id: `org_${randomUUID().replaceAll('-', '')}`,
        name: organisationName(name),
        billingName: null,
        billingAddress: null,
        createdAt: this.now(),
      },
      ownerAccountId,
    );
  }

  /** Replaces the sign-in policy (the route has checked the caller is an owner whose session meets it). */
  async setSignInPolicy(organisationId: string, policy: OrganisationSignInPolicy): Promise<void> {
    if (!(await this.organisations.setSignInPolicy(organisationId, policy)))
      throw new GatewayError('not_found', `No organisation '${organisationId}'.`);
  }

  /** Makes the session work in that organisation; refused (and nothing changed) unless the person is a member. */
  async switchTo(accountId: string, sessionIdHash: string, organisationId: string): Promise<Membership> {
    const membership = await this.organisations.membership(organisationId, accountId);
    if (membership === null) {
      throw new GatewayError('not_found', `You are not a member of organisation '${organisationId}'.`, {
        param: 'organisationId',
      });
    }
    await this.organisations.setSessionOrganisation(sessionIdHash, organisationId);
    return membership;
  }
}

/** A trimmed name of 1 to ORGANISATION_NAME_MAX characters, without control characters. */
export function organisationName(text: string): string {
  const name = text.trim();
  if (name.length === 0 || name.length > ORGANISATION_NAME_MAX || /\p{Cc}/u.test(name)) {
    throw invalidRequest(
      `An organisation name has 1 to ${ORGANISATION_NAME_MAX} characters and no control characters.`,
      'name',
    );
  }
  return name;
}
