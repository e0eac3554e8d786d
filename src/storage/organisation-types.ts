/**
 * Organisations and their members, as the services see them (0015-organisations). Times are epoch ms.
 */

/** Roles a person may hold in an organisation; what each allows is in accounts/organisation-roles.ts. */
export const ORGANISATION_ROLES = ['owner', 'admin', 'developer', 'billing', 'viewer'] as const;
export type OrganisationRole = (typeof ORGANISATION_ROLES)[number];

export function isOrganisationRole(value: unknown): value is OrganisationRole {
  return typeof value === 'string' && (ORGANISATION_ROLES as readonly string[]).includes(value);
}

export interface OrganisationRecord {
  id: string;
  name: string;
  billingName: string | null;
  billingAddress: string | null;
  createdAt: number;
}

/** An organisation seen by one of its members. */
export interface Membership {
  organisation: OrganisationRecord;
  role: OrganisationRole;
  /** When the person joined. */
  joinedAt: number;
}

export interface OrganisationMember {
  accountId: string;
  email: string;
  role: OrganisationRole;
  joinedAt: number;
}

/** What a role change or removal came to; only `changed` changed anything. */
export type MemberChange =
  | { kind: 'changed'; previousRole: OrganisationRole }
  /** No such member (or organisation). */
  | { kind: 'not_member' }
  /** It would leave the organisation without an owner. */
  | { kind: 'last_owner' }
  /** It touches an owner (or makes one) and the caller may not. */
  | { kind: 'owner_only' };

export interface OrganisationRepository {
  findById(id: string): Promise<OrganisationRecord | null>;
  /** Creates the organisation with `ownerAccountId` as its only member, an owner, and its default project. */
  create(organisation: OrganisationRecord, ownerAccountId: string): Promise<OrganisationRecord>;
  /** The person's organisations, oldest membership first. */
  membershipsOf(accountId: string): Promise<Membership[]>;
  /** The person's membership of that organisation; null when they are not a member. */
  membership(organisationId: string, accountId: string): Promise<Membership | null>;
  members(organisationId: string): Promise<OrganisationMember[]>;
  /**
   * Gives a member another role, in one transaction under the organisation's lock; refused when it would leave no
   * owner, or when it touches an owner (demotes one, or makes one) and `mayTouchOwners` is false.
   */
  changeRole(
    organisationId: string,
    accountId: string,
    role: OrganisationRole,
    mayTouchOwners: boolean,
  ): Promise<MemberChange>;
  /** Removes a member (or the person leaves) under the same rules as `changeRole`. */
  removeMember(organisationId: string, accountId: string, mayTouchOwners: boolean): Promise<MemberChange>;
  /** Organisations where the person is the only owner and someone else is a member. */
  soleOwnerships(accountId: string): Promise<Array<{ id: string; name: string }>>;
  /** Makes the session work in that organisation (the caller has checked the membership). */
  setSessionOrganisation(sessionIdHash: string, organisationId: string): Promise<void>;
  /** The operator's switch: requests with the organisation's keys are refused while set. False: no such organisation. */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
}
