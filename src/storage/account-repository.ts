import { sql, type Kysely, type Selectable } from 'kysely';
import {
  ACCOUNTS_EMAIL_UNIQUE,
  fromIntegerBoolean,
  normalizeEmail,
  toIntegerBoolean,
  type AccountsTable,
  type Database,
  type UniqueViolationDetector,
} from './database-schema.js';
import { fromMoneyColumn, money } from './money-sql.js';
import { defaultProjectRow } from './project-repository.js';
import { writeTransaction } from './transactions.js';
import {
  DuplicateEmailError,
  type AccountRecord,
  type AccountRepository,
  type AccountRole,
  type AccountWithBalance,
  type NewAccount,
  type Storage,
} from './types.js';

/** What a person's first organisation is called until they rename it. */
export const PERSONAL_ORGANISATION_NAME = 'Personal';

export function createAccountRepository(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  isUniqueViolation: UniqueViolationDetector,
): AccountRepository {
  return {
    async create(account: NewAccount): Promise<AccountRecord> {
      try {
        // The person and their personal organisation, which takes the account's id (as 0015-organisations gave
        // every account made before it): one rule for old and new accounts.
        await writeTransaction(db, dialect, async (trx) => {
          await trx
            .insertInto('accounts')
            .values({
              id: account.id,
              email: account.email,
              email_normalized: normalizeEmail(account.email),
              password_hash: account.passwordHash,
              role: account.role,
              disabled: 0,
              created_at: account.createdAt,
            })
            .execute();
          await trx
            .insertInto('organisations')
            .values({
              id: account.id,
              name: PERSONAL_ORGANISATION_NAME,
              created_at: account.createdAt,
              tier: account.tier,
              granted_tier: account.tier,
            })
            .execute();
          await trx
            .insertInto('organisation_members')
            .values({
              organisation_id: account.id,
              account_id: account.id,
              role: 'owner',
              created_at: account.createdAt,
            })
            .execute();
          await trx.insertInto('projects').values(defaultProjectRow(account.id, account.createdAt)).execute();
        });
      } catch (error) {
        // Insert-and-catch rather than check-then-insert: only the unique index is race-free.
        if (isUniqueViolation(error, ACCOUNTS_EMAIL_UNIQUE)) throw new DuplicateEmailError(account.email);
        throw error;
      }
      return {
        id: account.id,
        email: account.email,
        passwordHash: account.passwordHash,
        role: account.role,
        tier: account.tier,
        disabled: false,
        createdAt: account.createdAt,
      };
    },

    async findById(id: string): Promise<AccountRecord | null> {
      const row = await withPersonalOrganisation(db).where('accounts.id', '=', id).executeTakeFirst();
      return row ? toAccountRecord(row) : null;
    },

    async setTier(id: string, tier: string): Promise<boolean> {
      // The operator's tier of the personal organisation; tier-repository.ts raises `tier` above it again when a
      // bought or reached tier is higher.
      const result = await db
        .updateTable('organisations')
        .set({ tier, granted_tier: tier })
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async setDisabled(id: string, disabled: boolean): Promise<boolean> {
      // The person and their personal organisation together: a disabled account's keys were refused before
      // organisations held them, and still are.
      return writeTransaction(db, dialect, async (trx) => {
        const result = await trx
          .updateTable('accounts')
          .set({ disabled: toIntegerBoolean(disabled) })
          .where('id', '=', id)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
        await trx
          .updateTable('organisations')
          .set({ disabled: toIntegerBoolean(disabled) })
          .where('id', '=', id)
          .execute();
        return true;
      });
    },

    async setPasswordHash(id: string, passwordHash: string): Promise<boolean> {
      const result = await db
        .updateTable('accounts')
        .set({ password_hash: passwordHash })
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async listWithBalances({ query, limit, afterEmail }): Promise<AccountWithBalance[]> {
      // The balance of the person's personal organisation (same id): what the account's balance was before
      // organisations paid.
      let select = withPersonalOrganisation(db)
        .select(money('organisations.balance_nano').as('balance_nano'))
        .select('accounts.email_normalized');
      if (query !== undefined && query !== '') {
        // LIKE with the wildcards of the operator's text escaped: a search for "a_b" matches only "a_b".
        const pattern = `%${normalizeEmail(query).replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
        select = select.where(sql<boolean>`accounts.email_normalized like ${pattern} escape '\\'`);
      }
      if (afterEmail !== undefined) select = select.where('accounts.email_normalized', '>', afterEmail);
      const rows = await select.orderBy('accounts.email_normalized').limit(limit).execute();
      return rows.map((row) => ({ ...toAccountRecord(row), balanceNano: fromMoneyColumn(row.balance_nano) }));
    },

    async findByEmail(email: string): Promise<AccountRecord | null> {
      const row = await withPersonalOrganisation(db)
        .where('accounts.email_normalized', '=', normalizeEmail(email))
        .executeTakeFirst();
      return row ? toAccountRecord(row) : null;
    },
  };
}

/** The profile columns; money columns are read only through the billing repository's text casts. */
export const ACCOUNT_COLUMNS = ['id', 'email', 'password_hash', 'role', 'disabled', 'created_at'] as const;

/** An account's profile, with the tier of its personal organisation (null: none, as for a deleted account's). */
export type AccountRow = Pick<Selectable<AccountsTable>, (typeof ACCOUNT_COLUMNS)[number]> & { tier: string | null };

/** Accounts joined with their personal organisation (same id), selecting an AccountRow. */
function withPersonalOrganisation(db: Kysely<Database>) {
  return db
    .selectFrom('accounts')
    .leftJoin('organisations', 'organisations.id', 'accounts.id')
    .select(ACCOUNT_COLUMNS.map((column) => `accounts.${column}` as const))
    .select('organisations.tier');
}

export function toAccountRecord(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    role: parseRole(row.role),
    tier: row.tier ?? 'standard',
    disabled: fromIntegerBoolean(row.disabled),
    createdAt: row.created_at,
  };
}

/** The CHECK constraint keeps other values out; this narrows the type without a blind cast. */
function parseRole(value: string): AccountRole {
  if (value === 'user' || value === 'admin') return value;
  throw new Error(`Unknown account role in storage: ${JSON.stringify(value)}`);
}
