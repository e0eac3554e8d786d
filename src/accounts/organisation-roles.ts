/**
 * What each role in an organisation may do. One table, read by the dashboard's session hook (a route names the
 * permission it needs) and by the services that act on members, keys and money.
 */

import { ORGANISATION_ROLES, type OrganisationRole } from '../storage/organisation-types.js';

export { ORGANISATION_ROLES, isOrganisationRole, type OrganisationRole } from '../storage/organisation-types.js';

export const PERMISSIONS = [
  /** See the organisation: overview, models, usage, keys list, members list. Every member. */
  'organisation:read',
  /** Rename, billing details, settings, delete. */
  'organisation:manage',
  /** Invite, remove, change roles. */
  'members:manage',
  /** Create, rotate, revoke and limit the keys the person created. */
  'keys:own',
  /** The same for every key of the organisation. */
  'keys:manage',
  /** Projects, their allowlists and limits; the organisation's limits and alerts. */
  'limits:manage',
  /** Budget alert rules: what fires, and where the mail and webhooks go. */
  'alerts:manage',
  /** Top-ups, codes, tier purchases. */
  'billing:manage',
  /** Ledger, receipts, exports of money. */
  'billing:read',
  /** The audit log. */
  'audit:read',
  /** Model calls from the dashboard (the playground), billed to the organisation. */
  'models:call',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ALL: readonly Permission[] = PERMISSIONS;

const GRANTS: Readonly<Record<OrganisationRole, readonly Permission[]>> = {
  owner: ALL,
  admin: ALL.filter((permission) => permission !== 'billing:manage'),
  developer: ['organisation:read', 'keys:own', 'models:call'],
  billing: ['organisation:read', 'alerts:manage', 'billing:manage', 'billing:read'],
  // Read only: everything a member sees, the ledger included, and nothing that changes.
  viewer: ['organisation:read', 'billing:read'],
};

const granted = new Map(ORGANISATION_ROLES.map((role) => [role, new Set<Permission>(GRANTS[role])] as const));

/** What the role may do, in the table's order: the dashboard shows and hides its controls by this list. */
export function permissionsOf(role: OrganisationRole): readonly Permission[] {
  return GRANTS[role];
}

export function roleAllows(role: OrganisationRole, permission: Permission): boolean {
  return granted.get(role)?.has(permission) === true;
}
