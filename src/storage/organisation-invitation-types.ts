/**
 * Invitations to join an organisation (0017-organisation-invitations), as the services see them. Times are epoch ms.
 */
import type { OrganisationRole } from './organisation-types.js';

export interface InvitationRecord {
  id: string;
  /** Hex SHA-256 of the link's token; the token itself is never stored. */
  tokenHash: string;
  organisationId: string;
  /** The address as the inviter typed it. */
  email: string;
  role: OrganisationRole;
  invitedBy: string;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
  acceptedBy: string | null;
  revokedAt: number | null;
}

/** An invitation with what the invited person is shown before accepting. */
export interface InvitationWithOrganisation extends InvitationRecord {
  organisationName: string;
  /** The inviter's address (a tombstone when their account was deleted since). */
  invitedByEmail: string;
}

export type NewInvitation = Omit<InvitationRecord, 'acceptedAt' | 'acceptedBy' | 'revokedAt'>;

/** What accepting an invitation came to; only `joined` changed anything. */
export type AcceptOutcome =
  | { kind: 'joined'; invitation: InvitationRecord }
  | { kind: 'invalid' | 'used' | 'revoked' | 'expired' | 'other_email' | 'already_member' };

export interface OrganisationInvitationRepository {
  create(invitation: NewInvitation): Promise<InvitationRecord>;
  findByTokenHash(tokenHash: string): Promise<InvitationWithOrganisation | null>;
  /** Neither accepted, revoked nor expired at `at`; oldest first. */
  pending(organisationId: string, at: number): Promise<InvitationRecord[]>;
  /** Ends a pending invitation of that organisation; false when there is none (unknown, used, revoked). */
  revoke(organisationId: string, invitationId: string, at: number): Promise<boolean>;
  /**
   * In one transaction under the organisation's lock: checks the invitation (unused, unrevoked, unexpired at `at`,
   * addressed to `emailNormalized`, the person not already a member), marks it accepted and adds the member.
   * Of two concurrent uses of one link exactly one joins.
   */
  accept(tokenHash: string, accountId: string, emailNormalized: string, at: number): Promise<AcceptOutcome>;
}
