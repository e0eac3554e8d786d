import type { Kysely } from 'kysely';
import type { Database } from './database-schema.js';
import { lockOrganisation } from './organisation-locks.js';
import {
  isOrganisationRole,
  type MemberChange,
  type OrganisationRepository,
  type OrganisationRole,
  type ProvisionOutcome,
} from './organisation-types.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

type MemberWrites = Pick<OrganisationRepository, 'changeRole' | 'removeMember' | 'soleOwnerships' | 'provisionMember'>;

/**
 * Role changes and removals. Each runs in one transaction under the organisation's lock, reads the member's role
 * and the owner count there, and writes only when an owner remains: two owners demoting each other at once are
 * serialised, and the second finds itself the last owner.
 */
export function createMemberWrites(db: Kysely<Database>, dialect: Storage['dialect']): MemberWrites {
  const change = (
    organisationId: string,
    accountId: string,
    newRole: OrganisationRole | null,
    mayTouchOwners: boolean,
    at: number,
  ): Promise<MemberChange> =>
    writeTransaction(db, dialect, async (trx) => {
      if (!(await lockOrganisation(trx, dialect, organisationId))) return { kind: 'not_member' };
      const row = await trx
        .selectFrom('organisation_members')
        .select('role')
        .where('organisation_id', '=', organisationId)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (row === undefined) return { kind: 'not_member' };
      // The CHECK constraint keeps other values out (organisation-repository.ts narrows the same way).
      if (!isOrganisationRole(row.role)) throw new Error(`Unknown organisation role in storage: ${row.role}`);
      const previousRole = row.role;
      if (!mayTouchOwners && (previousRole === 'owner' || newRole === 'owner')) return { kind: 'owner_only' };
      if (previousRole === 'owner' && newRole !== 'owner' && (await ownerCount(trx, organisationId)) <= 1)
        return { kind: 'last_owner' };
      let revokedKeyIds: string[] = [];
      if (newRole === null) {
        await trx
          .deleteFrom('organisation_members')
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .execute();
        revokedKeyIds = await revokeKeysCreatedBy(trx, organisationId, accountId, at);
      } else if (newRole !== previousRole) {
        await trx
          .updateTable('organisation_members')
          .set({ role: newRole })
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .execute();
      }
      return { kind: 'changed', previousRole, revokedKeyIds };
    });

  return {
    changeRole: (organisationId, accountId, role, mayTouchOwners) =>
      change(organisationId, accountId, role, mayTouchOwners, 0),
    removeMember: (organisationId, accountId, mayTouchOwners, at) =>
      change(organisationId, accountId, null, mayTouchOwners, at),

    provisionMember: (organisationId, accountId, role, provider, at) =>
      writeTransaction(db, dialect, async (trx): Promise<ProvisionOutcome | null> => {
        if (!(await lockOrganisation(trx, dialect, organisationId))) return null;
        const row = await trx
          .selectFrom('organisation_members')
          .select(['role', 'provisioned_by'])
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .executeTakeFirst();
        if (row === undefined) {
          await trx
            .insertInto('organisation_members')
            .values({
              organisation_id: organisationId,
              account_id: accountId,
              role,
              created_at: at,
              provisioned_by: provider,
            })
            .execute();
          return { kind: 'added', role };
        }
        if (!isOrganisationRole(row.role)) throw new Error(`Unknown organisation role in storage: ${row.role}`);
        // A member invited or made by hand keeps the role given to them: the claim rules only whom it added.
        if (row.provisioned_by !== provider || row.role === role) return { kind: 'unchanged', role: row.role };
        if (row.role === 'owner' && (await ownerCount(trx, organisationId)) <= 1)
          return { kind: 'last_owner', role: row.role };
        await trx
          .updateTable('organisation_members')
          .set({ role })
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .execute();
        return { kind: 'role_changed', previousRole: row.role, role };
      }),

    async soleOwnerships(accountId) {
      // Organisations the person owns where no one else is an owner but someone else is a member.
      const rows = await db
        .selectFrom('organisation_members as mine')
        .innerJoin('organisations', 'organisations.id', 'mine.organisation_id')
        .select(['organisations.id', 'organisations.name'])
        .where('mine.account_id', '=', accountId)
        .where('mine.role', '=', 'owner')
        .where((eb) =>
          eb.and([
            eb.not(
              eb.exists(
                eb
                  .selectFrom('organisation_members as other_owner')
                  .select('other_owner.account_id')
                  .whereRef('other_owner.organisation_id', '=', 'mine.organisation_id')
                  .where('other_owner.account_id', '!=', accountId)
                  .where('other_owner.role', '=', 'owner'),
              ),
            ),
            eb.exists(
              eb
                .selectFrom('organisation_members as other')
                .select('other.account_id')
                .whereRef('other.organisation_id', '=', 'mine.organisation_id')
                .where('other.account_id', '!=', accountId),
            ),
          ]),
        )
        .orderBy('organisations.id')
        .execute();
      return rows.map((row) => ({ id: row.id, name: row.name }));
    },
  };
}

/**
 * Revokes the active keys the person created in the organisation (the organisation's row is locked first, as
 * for any write to its keys); returns their ids. The playground's keys record no creator and are not touched.
 */
async function revokeKeysCreatedBy(
  trx: Executor,
  organisationId: string,
  accountId: string,
  at: number,
): Promise<string[]> {
  const rows = await trx
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', organisationId)
    .where('created_by', '=', accountId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((row) => row.id).sort();
}

async function ownerCount(trx: Executor, organisationId: string): Promise<number> {
  const row = await trx
    .selectFrom('organisation_members')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('organisation_id', '=', organisationId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
