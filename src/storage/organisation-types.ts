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
  /** How members must have signed in to reach it (0023); no requirement on a new organisation. */
  signInPolicy: OrganisationSignInPolicy;
}

/** An organisation before it is stored: a new one has no sign-in requirement. */
export type NewOrganisation = Omit<OrganisationRecord, 'signInPolicy'>;

export interface OrganisationSignInPolicy {
  /** Members need a second factor set up, and a session that used it (or single sign-on). */
  requireSecondFactor: boolean;
  /** When not empty: only sessions started through one of these SSO providers reach the organisation. */
  requiredSsoProviders: readonly string[];
}

export const NO_SIGN_IN_POLICY: OrganisationSignInPolicy = { requireSecondFactor: false, requiredSsoProviders: [] };

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
  /** The SSO provider that added the member and keeps the role in step with its claim; null: joined otherwise. */
  provisionedBy: string | null;
  /** How the person can sign in, for the members list: the second factors set up and the SSO providers linked. */
  signIn: { totp: boolean; passkeys: number; ssoProviders: string[] };
}

/** What provisioning a person from a provider's claim did to their membership. */
export type ProvisionOutcome =
  | { kind: 'added'; role: OrganisationRole }
  | { kind: 'role_changed'; previousRole: OrganisationRole; role: OrganisationRole }
  /** Already a member with that role, or a member the provider did not add (their role is not the claim's). */
  | { kind: 'unchanged'; role: OrganisationRole }
  /** The claim would demote the organisation's last owner: kept. */
  | { kind: 'last_owner'; role: OrganisationRole };

/** What a role change or removal came to; only `changed` changed anything. */
export type MemberChange =
  /** A removal also lists the keys the person created there, revoked in the same transaction. */
  | { kind: 'changed'; previousRole: OrganisationRole; revokedKeyIds: string[] }
  /** No such member (or organisation). */
  | { kind: 'not_member' }
  /** It would leave the organisation without an owner. */
  | { kind: 'last_owner' }
  /** It touches an owner (or makes one) and the caller may not. */
  | { kind: 'owner_only' };

export interface OrganisationRepository {
  findById(id: string): Promise<OrganisationRecord | null>;
  /** Creates the organisation with `ownerAccountId` as its only member, an owner, and its default project. */
  create(organisation: NewOrganisation, ownerAccountId: string): Promise<OrganisationRecord>;
  /** Replaces the organisation's sign-in policy; false when there is no such organisation. */
  setSignInPolicy(id: string, policy: OrganisationSignInPolicy): Promise<boolean>;
  /**
   * A person signing in through an SSO provider that provisions into the organisation: added with the claim's
   * role when not a member; a member the provider added gets the claim's role (never leaving no owner). One
   * transaction under the organisation's lock. Null when there is no such organisation.
   */
  provisionMember(
    organisationId: string,
    accountId: string,
    role: OrganisationRole,
    provider: string,
    at: number,
  ): Promise<ProvisionOutcome | null>;
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
  /**
   * Removes a member (or the person leaves) under the same rules as `changeRole`, and revokes at `at` the active
   * keys they created in the organisation in the same transaction: no key outlives the membership.
   */
  removeMember(organisationId: string, accountId: string, mayTouchOwners: boolean, at: number): Promise<MemberChange>;
  /** Organisations where the person is the only owner and someone else is a member. */
  soleOwnerships(accountId: string): Promise<Array<{ id: string; name: string }>>;
  /** Makes the session work in that organisation (the caller has checked the membership). */
  setSessionOrganisation(sessionIdHash: string, organisationId: string): Promise<void>;
  /** The operator's switch: requests with the organisation's keys are refused while set. False: no such organisation. */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
}
