import type { Kysely, Selectable } from 'kysely';
import type { Database, OrganisationsTable } from './database-schema.js';
import {
  isOrganisationRole,
  type Membership,
  NO_SIGN_IN_POLICY,
  type OrganisationRecord,
  type OrganisationSignInPolicy,
  type OrganisationRepository,
  type OrganisationRole,
} from './organisation-types.js';
import type { IdentityFactorTables } from './identity-factor-types.js';
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

    async setSignInPolicy(id, policy) {
      const result = await db
        .updateTable('organisations')
        .set(signInPolicyColumns(policy))
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

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
      return { ...organisation, signInPolicy: NO_SIGN_IN_POLICY };
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
      const withFactors = db.withTables<IdentityFactorTables>();
      const rows = await withFactors
        .selectFrom('organisation_members')
        .innerJoin('accounts', 'accounts.id', 'organisation_members.account_id')
        .select([
          'accounts.id',
          'accounts.email',
          'organisation_members.role',
          'organisation_members.created_at',
          'organisation_members.provisioned_by',
        ])
        // How each can sign in, for the members list: a confirmed authenticator, passkeys, SSO links.
        .select((eb) => [
          eb
            .selectFrom('totp_factors')
            .select((inner) => inner.fn.countAll<number | string>().as('count'))
            .whereRef('totp_factors.account_id', '=', 'accounts.id')
            .where('totp_factors.confirmed_at', 'is not', null)
            .as('totp_count'),
          eb
            .selectFrom('passkeys')
            .select((inner) => inner.fn.countAll<number | string>().as('count'))
            .whereRef('passkeys.account_id', '=', 'accounts.id')
            .as('passkey_count'),
        ])
        .where('organisation_members.organisation_id', '=', organisationId)
        .orderBy('organisation_members.created_at')
        .orderBy('accounts.id')
        .execute();
      const links =
        rows.length === 0
          ? []
          : await withFactors
              .selectFrom('sso_identities')
              .select(['account_id', 'provider'])
              .where(
                'account_id',
                'in',
                rows.map((row) => row.id),
              )
              .orderBy('provider')
              .execute();
      return rows.map((row) => ({
        accountId: row.id,
        email: row.email,
        role: parseOrganisationRole(row.role),
        joinedAt: row.created_at,
        provisionedBy: row.provisioned_by,
        signIn: {
          totp: Number(row.totp_count ?? 0) > 0,
          passkeys: Number(row.passkey_count ?? 0),
          ssoProviders: [...new Set(links.filter((link) => link.account_id === row.id).map((link) => link.provider))],
        },
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

export const ORGANISATION_COLUMNS = [
  'id',
  'name',
  'billing_name',
  'billing_address',
  'created_at',
  'require_second_factor',
  'required_sso_providers',
] as const;

export function toOrganisationRecord(
  row: Pick<Selectable<OrganisationsTable>, (typeof ORGANISATION_COLUMNS)[number]>,
): OrganisationRecord {
  return {
    id: row.id,
    name: row.name,
    billingName: row.billing_name,
    billingAddress: row.billing_address,
    createdAt: row.created_at,
    signInPolicy: toSignInPolicy(row.require_second_factor, row.required_sso_providers),
  };
}

/** The policy columns as stored: a flag, and the provider ids comma-separated (ids never hold a comma). */
export function toSignInPolicy(requireSecondFactor: number | null, providers: string | null): OrganisationSignInPolicy {
  return {
    requireSecondFactor: Number(requireSecondFactor ?? 0) === 1,
    requiredSsoProviders: providers === null || providers === '' ? [] : providers.split(','),
  };
}

function signInPolicyColumns(policy: OrganisationSignInPolicy) {
  return {
    require_second_factor: policy.requireSecondFactor ? 1 : 0,
    required_sso_providers: policy.requiredSsoProviders.length === 0 ? null : policy.requiredSsoProviders.join(','),
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
