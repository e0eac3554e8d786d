import type { Kysely, Selectable } from 'kysely';
import { normalizeEmail, type Database, type OrganisationInvitationsTable } from './database-schema.js';
import { lockOrganisation } from './organisation-locks.js';
import type { InvitationRecord, OrganisationInvitationRepository } from './organisation-invitation-types.js';
import { parseOrganisationRole } from './organisation-repository.js';
import { writeTransaction } from './transactions.js';
import type { Storage } from './types.js';

const COLUMNS = [
  'id',
  'token_hash',
  'organisation_id',
  'email',
  'role',
  'invited_by',
  'created_at',
  'expires_at',
  'accepted_at',
  'accepted_by',
  'revoked_at',
] as const;

export function createOrganisationInvitationRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
): OrganisationInvitationRepository {
  return {
    async create(invitation) {
      await db
        .insertInto('organisation_invitations')
        .values({
          id: invitation.id,
          token_hash: invitation.tokenHash,
          organisation_id: invitation.organisationId,
          email: invitation.email,
          email_normalized: normalizeEmail(invitation.email),
          role: invitation.role,
          invited_by: invitation.invitedBy,
          created_at: invitation.createdAt,
          expires_at: invitation.expiresAt,
        })
        .execute();
      return { ...invitation, acceptedAt: null, acceptedBy: null, revokedAt: null };
    },

    async findByTokenHash(tokenHash) {
      const row = await db
        .selectFrom('organisation_invitations')
        .innerJoin('organisations', 'organisations.id', 'organisation_invitations.organisation_id')
        .innerJoin('accounts', 'accounts.id', 'organisation_invitations.invited_by')
        .select(COLUMNS.map((column) => `organisation_invitations.${column}` as const))
        .select(['organisations.name as organisation_name', 'accounts.email as invited_by_email'])
        .where('organisation_invitations.token_hash', '=', tokenHash)
        .executeTakeFirst();
      if (row === undefined) return null;
      return { ...toInvitation(row), organisationName: row.organisation_name, invitedByEmail: row.invited_by_email };
    },

    async pending(organisationId, at) {
      const rows = await db
        .selectFrom('organisation_invitations')
        .select(COLUMNS)
        .where('organisation_id', '=', organisationId)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', at)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map(toInvitation);
    },

    async revoke(organisationId, invitationId, at) {
      const result = await db
        .updateTable('organisation_invitations')
        .set({ revoked_at: at })
        .where('id', '=', invitationId)
        .where('organisation_id', '=', organisationId)
        .where('accepted_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async accept(tokenHash, accountId, emailNormalized, at) {
      const found = await db
        .selectFrom('organisation_invitations')
        .select('organisation_id')
        .where('token_hash', '=', tokenHash)
        .executeTakeFirst();
      if (found === undefined) return { kind: 'invalid' };
      return writeTransaction(db, dialect, async (trx) => {
        await lockOrganisation(trx, dialect, found.organisation_id);
        // Read again under the lock: a concurrent accept or revoke has finished by now.
        const row = await trx
          .selectFrom('organisation_invitations')
          .select([...COLUMNS, 'email_normalized'])
          .where('token_hash', '=', tokenHash)
          .executeTakeFirstOrThrow();
        if (row.accepted_at !== null) return { kind: 'used' as const };
        if (row.revoked_at !== null) return { kind: 'revoked' as const };
        if (row.expires_at <= at) return { kind: 'expired' as const };
        if (row.email_normalized !== emailNormalized) return { kind: 'other_email' as const };
        const member = await trx
          .selectFrom('organisation_members')
          .select('role')
          .where('organisation_id', '=', row.organisation_id)
          .where('account_id', '=', accountId)
          .executeTakeFirst();
        if (member !== undefined) return { kind: 'already_member' as const };
        await trx
          .updateTable('organisation_invitations')
          .set({ accepted_at: at, accepted_by: accountId })
          .where('id', '=', row.id)
          .execute();
        await trx
          .insertInto('organisation_members')
          .values({ organisation_id: row.organisation_id, account_id: accountId, role: row.role, created_at: at })
          .execute();
        return { kind: 'joined' as const, invitation: { ...toInvitation(row), acceptedAt: at, acceptedBy: accountId } };
      });
    },
  };
}

function toInvitation(row: Pick<Selectable<OrganisationInvitationsTable>, (typeof COLUMNS)[number]>): InvitationRecord {
  return {
    id: row.id,
    tokenHash: row.token_hash,
    organisationId: row.organisation_id,
    email: row.email,
    role: parseOrganisationRole(row.role),
    invitedBy: row.invited_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    acceptedAt: row.accepted_at,
    acceptedBy: row.accepted_by,
    revokedAt: row.revoked_at,
  };
}
