import { createContext, useContext } from 'react';
import type { OrganisationMembership, OrganisationRole, Permission } from '../api/organisations';

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
  /** The organisation's sign-in policy refused this session: what it asks for, until the next page. */
  signInRefusal: { code: string; message: string } | undefined;
  clearSignInRefusal: () => void;
}

export const OrganisationContext = createContext<OrganisationValue | null>(null);

export function useOrganisation(): OrganisationValue {
  const value = useContext(OrganisationContext);
  if (value === null) throw new Error('useOrganisation outside a logged-in page');
  return value;
}

/** Whether the person's role in the session's organisation allows `permission`. */
export function useCan(permission: Permission): boolean {
  return useOrganisation().current?.permissions.includes(permission) === true;
}
