import { createContext, useContext } from 'react';
import type { OrganisationMembership, OrganisationRole } from '../api/organisations';

/**
 * What each role may do, as the server's table (src/accounts/organisation-roles.ts) grants it. The web app is built
 * apart from the server, so it keeps its own copy; it only hides or disables controls, the server decides.
 */
export type Permission =
  | 'organisation:read'
  | 'organisation:manage'
  | 'members:manage'
  | 'keys:own'
  | 'keys:manage'
  | 'limits:manage'
  | 'billing:manage'
  | 'billing:read'
  | 'audit:read'
  | 'models:call';

const ALL: Permission[] = [
  'organisation:read',
  'organisation:manage',
  'members:manage',
  'keys:own',
  'keys:manage',
  'limits:manage',
  'billing:manage',
  'billing:read',
  'audit:read',
  'models:call',
];

const GRANTS: Record<OrganisationRole, Permission[]> = {
  owner: ALL,
  admin: ALL.filter((permission) => permission !== 'billing:manage'),
  developer: ['organisation:read', 'keys:own', 'models:call'],
  billing: ['organisation:read', 'billing:manage', 'billing:read'],
  viewer: ['organisation:read', 'billing:read'],
};

export function roleAllows(role: OrganisationRole | undefined, permission: Permission): boolean {
  return role !== undefined && GRANTS[role].includes(permission);
}

/** Why a control is off, in words for the person looking at it. */
export function roleReason(role: OrganisationRole | undefined, what: string): string {
  return `Your role in this organisation (${role ?? 'none'}) does not allow ${what}. Ask an owner or admin.`;
}

export interface OrganisationValue {
  current: OrganisationMembership | null;
  organisations: OrganisationMembership[];
  /** Reads the list again (after create, accept, leave). */
  reload: () => Promise<void>;
  switchTo: (organisationId: string) => Promise<void>;
  /** Why the session moved to another organisation on its own (the person was removed), to show once. */
  notice: string | undefined;
}

export const OrganisationContext = createContext<OrganisationValue | null>(null);

export function useOrganisation(): OrganisationValue {
  const value = useContext(OrganisationContext);
  if (value === null) throw new Error('useOrganisation outside a logged-in page');
  return value;
}

/** Whether the person's role in the session's organisation allows `permission`. */
export function useCan(permission: Permission): boolean {
  return roleAllows(useOrganisation().current?.role, permission);
}
