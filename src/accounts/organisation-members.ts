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
 * owners" are decided by storage under the organisation's lock; a member who goes loses the keys they made there,
 * revoked in the same transaction as the removal (authentication reads storage on every request, so the next
 * request with one fails on every instance).
 */
export class OrganisationMembers {
  constructor(
    private readonly organisations: OrganisationRepository,
    private readonly now: () => number = Date.now,
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

  /** Returns the ids of the keys the person had made there, revoked with the removal. */
  async remove(actor: Membership, accountId: string): Promise<string[]> {
    const organisationId = actor.organisation.id;
    const change = await this.organisations.removeMember(organisationId, accountId, actor.role === 'owner', this.now());
    return expectChanged(change, accountId);
  }

  /**
   * The person leaves the organisation (refused when they are its last owner); the session moves on to their
   * oldest remaining organisation, which is returned (null: none left).
   */
  async leave(membership: Membership, accountId: string, sessionIdHash: string): Promise<Membership | null> {
    const organisationId = membership.organisation.id;
    expectChanged(await this.organisations.removeMember(organisationId, accountId, true, this.now()), accountId);
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
      await this.organisations.removeMember(membership.organisation.id, accountId, true, this.now());
    }
  }
}

function expectChanged(change: MemberChange, accountId: string): string[] {
  if (change.kind === 'changed') return change.revokedKeyIds;
  if (change.kind === 'last_owner') throw lastOwner();
  if (change.kind === 'owner_only') throw ownerOnly();
  throw notAMember(accountId);
}
