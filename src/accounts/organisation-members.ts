import { GatewayError } from '../canonical/errors.js';
import type { KeyService } from '../keys/key-service.js';
import type {
  MemberChange,
  Membership,
  OrganisationMember,
  OrganisationRepository,
  OrganisationRole,
} from '../storage/organisation-types.js';
import { lastOwner, notAMember, ownerOnly } from './organisation-error.js';

/**
 * Members of an organisation: list, change a role, remove, leave. The last-owner guard and "only an owner touches
 * owners" are decided by storage under the organisation's lock; a member who goes loses the keys they made there.
 */
export class OrganisationMembers {
  constructor(
    private readonly organisations: OrganisationRepository,
    private readonly keys: KeyService,
  ) {}

  list(organisationId: string): Promise<OrganisationMember[]> {
    return this.organisations.members(organisationId);
  }

  /** `actor` is the caller's membership (the route has checked `members:manage`). */
  async changeRole(actor: Membership, accountId: string, role: OrganisationRole): Promise<void> {
    const organisationId = actor.organisation.id;
    expectChanged(
      await this.organisations.changeRole(organisationId, accountId, role, actor.role === 'owner'),
      accountId,
    );
  }

  async remove(actor: Membership, accountId: string): Promise<void> {
    const organisationId = actor.organisation.id;
    expectChanged(await this.organisations.removeMember(organisationId, accountId, actor.role === 'owner'), accountId);
    await this.revokeKeysOf(organisationId, accountId);
  }

  /**
   * The person leaves the organisation (refused when they are its last owner); the session moves on to their
   * oldest remaining organisation, which is returned (null: none left).
   */
  async leave(membership: Membership, accountId: string, sessionIdHash: string): Promise<Membership | null> {
    const organisationId = membership.organisation.id;
    expectChanged(await this.organisations.removeMember(organisationId, accountId, true), accountId);
    await this.revokeKeysOf(organisationId, accountId);
    const next = (await this.organisations.membershipsOf(accountId))[0] ?? null;
    if (next !== null) await this.organisations.setSessionOrganisation(sessionIdHash, next.organisation.id);
    return next;
  }

  /**
   * A deleted account leaves every organisation it may leave (where it is not the last owner: its own, kept for its
   * ledger) and the keys it made in each are revoked, so no key outlives the person who holds its secret.
   */
  async leaveAll(accountId: string): Promise<void> {
    for (const membership of await this.organisations.membershipsOf(accountId)) {
      const organisationId = membership.organisation.id;
      await this.organisations.removeMember(organisationId, accountId, true);
      await this.revokeKeysOf(organisationId, accountId);
    }
  }

  /**
   * Revokes, through KeyService like any revocation, the active keys the person created in the organisation: the
   * next request with one fails on every instance. The organisation's other keys stay.
   */
  private async revokeKeysOf(organisationId: string, accountId: string): Promise<void> {
    const keys = await this.keys.list(organisationId);
    for (const key of keys) {
      if (key.createdBy !== accountId || key.revokedAt !== null) continue;
      try {
        await this.keys.revoke(organisationId, key.id);
      } catch (error) {
        // Revoked meanwhile (by its maker, an admin): no reason to stop revoking the others.
        if (!(error instanceof GatewayError && error.code === 'not_found')) throw error;
      }
    }
  }
}

function expectChanged(change: MemberChange, accountId: string): void {
  if (change.kind === 'changed') return;
  if (change.kind === 'last_owner') throw lastOwner();
  if (change.kind === 'owner_only') throw ownerOnly();
  throw notAMember(accountId);
}
