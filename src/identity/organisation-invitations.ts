import { randomBytes, randomUUID } from 'node:crypto';
import { OrganisationError } from '../accounts/organisation-error.js';
import { invalidRequest } from '../canonical/errors.js';
import { normalizeEmail } from '../storage/database-schema.js';
import type { IdentityRepository } from '../storage/identity-types.js';
import type {
  InvitationRecord,
  InvitationWithOrganisation,
  OrganisationInvitationRepository,
} from '../storage/organisation-invitation-types.js';
import type { Membership, OrganisationRepository, OrganisationRole } from '../storage/organisation-types.js';
import type { AccountRecord } from '../storage/types.js';
import { hashLinkToken, LinkRefusedError } from './account-links.js';
import { EMAIL_PATTERN } from './email-identity.js';
import { IdentityError } from './identity-error.js';
import { invitationMail } from './mail-messages.js';
import type { InvitationThrottle } from './mail-throttle.js';
import type { Mailer } from './mailer.js';

/** How long an invitation link works. */
export const INVITATION_LIFETIME_MS = 7 * 24 * 3_600_000;

/** 256 random bits, base64url: 43 characters (as the account links). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Where the dashboard's accept page lives; the token travels in the query, as the other links' do. */
export const INVITATION_PATH = '/accept-invitation';

export interface InvitationLink {
  /** `/accept-invitation?token=…`, to append to the gateway's address. */
  path: string;
  /** The whole link when PUBLIC_BASE_URL is set. */
  url: string | null;
}

export interface SentInvitation {
  invitation: InvitationRecord;
  /** True when the link went out by mail; otherwise `link` is for the inviter to pass on. */
  mailed: boolean;
  link: InvitationLink | null;
}

/**
 * Invitations to join an organisation by email, with a role. The link is single-use, expires after 7 days, and
 * storage keeps only the SHA-256 of its random token (like the account links: 256 random bits need no signature).
 * It is mailed when the gateway sends mail, and otherwise handed to the inviter to pass on. Accepting takes a
 * signed-in person whose account address is the invited one (case-insensitively), proven by mail when the gateway
 * sends mail.
 */
export class OrganisationInvitations {
  constructor(
    private readonly options: {
      invitations: OrganisationInvitationRepository;
      organisations: OrganisationRepository;
      identity: IdentityRepository;
      mailer: Mailer | undefined;
      publicBaseUrl: string | undefined;
      now: () => number;
      /** Limits invitation mails per inviter and per organisation (nothing is limited without it). */
      throttle?: InvitationThrottle;
    },
  ) {}

  /** `inviter` is the caller's membership (the route has checked `members:manage`). */
  async invite(
    inviter: Membership,
    invitedBy: AccountRecord,
    emailText: string,
    role: OrganisationRole,
  ): Promise<SentInvitation> {
    const email = emailText.trim();
    if (!EMAIL_PATTERN.test(email) || email.length > 254)
      throw invalidRequest(`'${emailText}' is not a valid email address.`, 'email');
    if (role === 'owner' && inviter.role !== 'owner')
      throw new OrganisationError(403, 'owner_only', 'Only an owner may invite an owner.', 'role');
    const organisation = inviter.organisation;
    const members = await this.options.organisations.members(organisation.id);
    if (members.some((member) => normalizeEmail(member.email) === normalizeEmail(email)))
      throw new OrganisationError(409, 'already_member', `${email} is already a member of this organisation.`, 'email');
    // Before anything is written: a refused invitation leaves no link behind.
    if (this.options.mailer !== undefined) await this.options.throttle?.admit(invitedBy.id, organisation.id);
    const token = randomBytes(32).toString('base64url');
    const at = this.options.now();
    const invitation = await this.options.invitations.create({
      id: `inv_${randomUUID().replaceAll('-', '')}`,
      tokenHash: hashLinkToken(token),
      organisationId: organisation.id,
      email,
      role,
      invitedBy: invitedBy.id,
      createdAt: at,
      expiresAt: at + INVITATION_LIFETIME_MS,
    });
    const link = this.link(token);
    if (this.options.mailer === undefined) return { invitation, mailed: false, link };
    try {
      // With mail configured the configuration guarantees PUBLIC_BASE_URL, so the mailed link is whole.
      await this.options.mailer.send(
        invitationMail(email, link.url ?? link.path, {
          organisationName: organisation.name,
          invitedByEmail: invitedBy.email,
          role,
        }),
      );
    } catch {
      // A link no one received must not stay usable: revoke it, and say so.
      await this.options.invitations.revoke(organisation.id, invitation.id, this.options.now());
      throw new IdentityError(502, 'mail_failed', 'The invitation mail could not be sent. Try again later.');
    }
    return { invitation, mailed: true, link: null };
  }

  /** What the link invites to, for the accept page (nothing changes); refused like accepting would be. */
  async preview(token: string): Promise<InvitationWithOrganisation> {
    const found = await this.find(token);
    const at = this.options.now();
    if (found.acceptedAt !== null) throw new LinkRefusedError('used');
    if (found.revokedAt !== null) throw invitationRevoked();
    if (found.expiresAt <= at) throw new LinkRefusedError('expired');
    return found;
  }

  /** Joins the signed-in person to the organisation with the invited role; nothing changes when refused. */
  async accept(account: AccountRecord, token: string): Promise<InvitationRecord> {
    // A dead link says so before anything is asked of the person; storage checks it again under the lock.
    await this.preview(token);
    if (this.options.mailer !== undefined) {
      const status = await this.options.identity.emailStatus(account.id);
      if (status?.emailVerifiedAt == null)
        throw new IdentityError(
          403,
          'email_unverified',
          `Verify your email address (${account.email}) first: open the link sent to it, then accept the invitation.`,
        );
    }
    const outcome = await this.options.invitations.accept(
      hashLinkToken(token),
      account.id,
      normalizeEmail(account.email),
      this.options.now(),
    );
    switch (outcome.kind) {
      case 'joined':
        return outcome.invitation;
      case 'invalid':
        throw new LinkRefusedError('invalid');
      case 'used':
        throw new LinkRefusedError('used');
      case 'expired':
        throw new LinkRefusedError('expired');
      case 'revoked':
        throw invitationRevoked();
      case 'other_email':
        throw new IdentityError(
          403,
          'other_email',
          `This invitation is for another address. Sign in with the invited address to accept it (you are signed in as ${account.email}).`,
        );
      case 'already_member':
        throw new OrganisationError(409, 'already_member', 'You are already a member of this organisation.');
    }
  }

  pending(organisationId: string): Promise<InvitationRecord[]> {
    return this.options.invitations.pending(organisationId, this.options.now());
  }

  async revoke(organisationId: string, invitationId: string): Promise<void> {
    if (!(await this.options.invitations.revoke(organisationId, invitationId, this.options.now())))
      throw new OrganisationError(404, 'not_found', `No pending invitation with id '${invitationId}'.`, 'id');
  }

  private async find(token: string): Promise<InvitationWithOrganisation> {
    if (!TOKEN_PATTERN.test(token)) throw new LinkRefusedError('invalid');
    const found = await this.options.invitations.findByTokenHash(hashLinkToken(token));
    // Found by the hash's index; a token differing by one character hashes to a row that does not exist.
    if (found === null) throw new LinkRefusedError('invalid');
    return found;
  }

  private link(token: string): InvitationLink {
    const path = `${INVITATION_PATH}?${new URLSearchParams({ token }).toString()}`;
    const base = this.options.publicBaseUrl;
    return { path, url: base === undefined ? null : `${base}${path}` };
  }
}

const invitationRevoked = () =>
  new IdentityError(400, 'invitation_revoked', 'This invitation was withdrawn. Ask for a new one.', 'token');
