import type { Kysely } from 'kysely';
import type { Database } from './database-schema.js';
import { lockOrganisation } from './organisation-locks.js';
import {
  isOrganisationRole,
  type MemberChange,
  type OrganisationRepository,
  type OrganisationRole,
} from './organisation-types.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

type MemberWrites = Pick<OrganisationRepository, 'changeRole' | 'removeMember' | 'soleOwnerships'>;

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
      if (newRole === null) {
        await trx
          .deleteFrom('organisation_members')
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .execute();
      } else if (newRole !== previousRole) {
        await trx
          .updateTable('organisation_members')
          .set({ role: newRole })
          .where('organisation_id', '=', organisationId)
          .where('account_id', '=', accountId)
          .execute();
      }
      return { kind: 'changed', previousRole };
    });

  return {
    changeRole: (organisationId, accountId, role, mayTouchOwners) =>
      change(organisationId, accountId, role, mayTouchOwners),
    removeMember: (organisationId, accountId, mayTouchOwners) =>
      change(organisationId, accountId, null, mayTouchOwners),

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

async function ownerCount(trx: Executor, organisationId: string): Promise<number> {
  const row = await trx
    .selectFrom('organisation_members')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('organisation_id', '=', organisationId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
