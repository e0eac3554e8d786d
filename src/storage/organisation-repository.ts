import type { Kysely, Selectable } from 'kysely';
import type { Database, OrganisationsTable } from './database-schema.js';
import {
  isOrganisationRole,
  type Membership,
  type OrganisationRecord,
  type OrganisationRepository,
  type OrganisationRole,
} from './organisation-types.js';
import { createMemberWrites } from './organisation-member-writes.js';
import { defaultProjectRow } from './project-repository.js';
import { writeTransaction } from './transactions.js';
import type { Storage } from './types.js';

export function createOrganisationRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
): OrganisationRepository {
  const memberships = () =>
    db
      .selectFrom('organisation_members')
      .innerJoin('organisations', 'organisations.id', 'organisation_members.organisation_id')
      .select(ORGANISATION_COLUMNS.map((column) => `organisations.${column}` as const))
      .select(['organisation_members.role', 'organisation_members.created_at as joined_at']);

  return {
    async setDisabled(id, disabled) {
      const result = await db
        .updateTable('organisations')
        .set({ disabled: disabled ? 1 : 0 })
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    ...createMemberWrites(db, dialect),

    async findById(id) {
      const row = await db
        .selectFrom('organisations')
        .select(ORGANISATION_COLUMNS)
        .where('id', '=', id)
        .executeTakeFirst();
      return row === undefined ? null : toOrganisationRecord(row);
    },

    async create(organisation, ownerAccountId) {
      await writeTransaction(db, dialect, async (trx) => {
        await trx
          .insertInto('organisations')
          .values({
            id: organisation.id,
            name: organisation.name,
            billing_name: organisation.billingName,
            billing_address: organisation.billingAddress,
            created_at: organisation.createdAt,
          })
          .execute();
        await trx
          .insertInto('organisation_members')
          .values({
            organisation_id: organisation.id,
            account_id: ownerAccountId,
            role: 'owner',
            created_at: organisation.createdAt,
          })
          .execute();
        await trx.insertInto('projects').values(defaultProjectRow(organisation.id, organisation.createdAt)).execute();
      });
      return organisation;
    },

    async membershipsOf(accountId) {
      const rows = await memberships()
        .where('organisation_members.account_id', '=', accountId)
        .orderBy('organisation_members.created_at')
        .orderBy('organisations.id')
        .execute();
      return rows.map(toMembership);
    },

    async membership(organisationId, accountId) {
      const row = await memberships()
        .where('organisation_members.account_id', '=', accountId)
        .where('organisation_members.organisation_id', '=', organisationId)
        .executeTakeFirst();
      return row === undefined ? null : toMembership(row);
    },

    async members(organisationId) {
      const rows = await db
        .selectFrom('organisation_members')
        .innerJoin('accounts', 'accounts.id', 'organisation_members.account_id')
        .select(['accounts.id', 'accounts.email', 'organisation_members.role', 'organisation_members.created_at'])
        .where('organisation_members.organisation_id', '=', organisationId)
        .orderBy('organisation_members.created_at')
        .orderBy('accounts.id')
        .execute();
      return rows.map((row) => ({
        accountId: row.id,
        email: row.email,
        role: parseOrganisationRole(row.role),
        joinedAt: row.created_at,
      }));
    },

    async setSessionOrganisation(sessionIdHash, organisationId) {
      await db
        .updateTable('sessions')
        .set({ organisation_id: organisationId })
        .where('id_hash', '=', sessionIdHash)
        .execute();
    },
  };
}

export const ORGANISATION_COLUMNS = ['id', 'name', 'billing_name', 'billing_address', 'created_at'] as const;

export function toOrganisationRecord(
  row: Pick<Selectable<OrganisationsTable>, (typeof ORGANISATION_COLUMNS)[number]>,
): OrganisationRecord {
  return {
    id: row.id,
    name: row.name,
    billingName: row.billing_name,
    billingAddress: row.billing_address,
    createdAt: row.created_at,
  };
}

function toMembership(
  row: Pick<Selectable<OrganisationsTable>, (typeof ORGANISATION_COLUMNS)[number]> & {
    role: string;
    joined_at: number;
  },
): Membership {
  return { organisation: toOrganisationRecord(row), role: parseOrganisationRole(row.role), joinedAt: row.joined_at };
}

/** The CHECK constraint keeps other values out; this narrows the type without a blind cast. */
export function parseOrganisationRole(value: string): OrganisationRole {
  if (isOrganisationRole(value)) return value;
  throw new Error(`Unknown organisation role in storage: ${JSON.stringify(value)}`);
}
