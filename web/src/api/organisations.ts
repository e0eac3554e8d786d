import { api } from './client';

/** Organisations, members and invitations (docs/organisations.md). */

export type OrganisationRole = 'owner' | 'admin' | 'developer' | 'billing' | 'viewer';
export const ORGANISATION_ROLES: OrganisationRole[] = ['owner', 'admin', 'developer', 'billing', 'viewer'];

/**
 * A permission of a role in an organisation. The server sends, with each membership, the permissions its role has
 * (src/accounts/organisation-roles.ts is the one table); the app only hides or disables controls, the server decides.
 */
export type Permission =
  | 'organisation:read'
  | 'organisation:manage'
  | 'members:manage'
  | 'keys:own'
  | 'keys:manage'
  | 'limits:manage'
  | 'alerts:manage'
  | 'billing:manage'
  | 'billing:read'
  | 'audit:read'
  | 'models:call';

export interface OrganisationMembership {
  id: string;
  name: string;
  role: OrganisationRole;
  /** What the role allows there, as the server's table grants it. */
  permissions: Permission[];
  joinedAt: number;
}

export interface Member {
  accountId: string;
  email: string;
  role: OrganisationRole;
  joinedAt: number;
  you: boolean;
  /** The SSO provider that added the member (its claim sets the role); null: joined otherwise. */
  provisionedBy: string | null;
  /** How the person can sign in. */
  signIn: { totp: boolean; passkeys: number; ssoProviders: string[]; secondFactor: boolean };
}

/** What an organisation requires of its members' sessions (docs/organisations.md). */
export interface SignInPolicy {
  requireSecondFactor: boolean;
  requiredSsoProviders: string[];
}

export interface SignInPolicyReply {
  policy: SignInPolicy;
  /** The SSO providers this gateway offers. */
  providers: { id: string; name: string }[];
}

export interface Invitation {
  id: string;
  email: string;
  role: OrganisationRole;
  createdAt: number;
  expiresAt: number;
}

export interface InvitationPreview {
  organisationName: string;
  email: string;
  role: OrganisationRole;
  invitedByEmail: string;
  expiresAt: number;
}

export const organisations = {
  list: () =>
    api<{ current: OrganisationMembership | null; organisations: OrganisationMembership[] }>(
      'GET',
      '/api/organisations',
    ),
  create: (name: string) => api<{ organisation: OrganisationMembership }>('POST', '/api/organisations', { name }),
  switchTo: (organisationId: string) =>
    api<{ organisation: OrganisationMembership }>('POST', '/api/organisations/current', { organisationId }),
  leave: () => api<{ organisation: OrganisationMembership | null }>('POST', '/api/organisation/leave'),
};

export const members = {
  list: () => api<{ members: Member[] }>('GET', '/api/organisation/members'),
  changeRole: (accountId: string, role: OrganisationRole) =>
    api<{ member: Member | null }>('PATCH', `/api/organisation/members/${encodeURIComponent(accountId)}`, { role }),
  remove: (accountId: string) =>
    api<{ removed: string; revokedKeyIds: string[] }>(
      'DELETE',
      `/api/organisation/members/${encodeURIComponent(accountId)}`,
    ),
};

export const signInPolicy = {
  get: () => api<SignInPolicyReply>('GET', '/api/organisation/sign-in-policy'),
  set: (policy: SignInPolicy) => api<SignInPolicyReply>('PUT', '/api/organisation/sign-in-policy', policy),
};

export const invitations = {
  list: () => api<{ invitations: Invitation[] }>('GET', '/api/organisation/invitations'),
  create: (email: string, role: OrganisationRole) =>
    api<{ invitation: Invitation; mailed: boolean; link: { path: string; url: string | null } | null }>(
      'POST',
      '/api/organisation/invitations',
      { email, role },
    ),
  revoke: (id: string) =>
    api<{ revoked: string }>('POST', `/api/organisation/invitations/${encodeURIComponent(id)}/revoke`),
  preview: (token: string) => api<{ invitation: InvitationPreview }>('POST', '/api/invitations/preview', { token }),
  accept: (token: string) =>
    api<{ organisation: OrganisationMembership }>('POST', '/api/invitations/accept', { token }),
};
