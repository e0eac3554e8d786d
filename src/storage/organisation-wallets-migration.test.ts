/**
 * Migration 0016-organisation-wallets on both backends, over data the schema before it wrote: every account's money,
 * free-allowance counters and tier columns land on its personal organisation to the unit (a balance past 2^53 nano,
 * holds, a bought tier that does not renew), a disabled account's organisation is disabled, the ledger still sums to
 * every balance, and the billing tables' rows all survive the move of their foreign keys to `organisations`, which
 * then holds a key of a non-personal organisation and refuses one of an organisation that does not exist.
 */
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  databaseBefore,
  migrationsBefore,
  rawPostgresDatabase,
  rawSqliteDatabase,
} from '../../test/helpers/migration-databases.js';
import { allMigrations } from './migrations/all-migrations.js';
import { openStorage } from './open-storage.js';

const AT = 20_000 * 86_400_000;
const DAY = 20_000;
const BEFORE = migrationsBefore('0016-organisation-wallets');
/** Past 2^53 (9,007,199,254,740,992): a JS number could not hold it. */
const BIG_BALANCE = 123_456_789_012_345_678n;
const BOUGHT_UNTIL = AT + 30 * 86_400_000;

async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, created_at, balance_nano,
              reserved_nano, free_day, free_used_tokens, free_reserved_tokens, granted_tier, bought_tier,
              bought_tier_until, bought_tier_renews)
            values ('a1', 'a@x.io', 'a@x.io', 'x', 'user', 'pro', ${AT}, ${BIG_BALANCE.toString()}, 5000, ${DAY}, 1234,
              56, 'standard', 'pro', ${BOUGHT_UNTIL}, 0)`.execute(db);
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, created_at, balance_nano,
              granted_tier, disabled)
            values ('a2', 'b@x.io', 'b@x.io', 'x', 'user', 'enterprise', ${AT + 1}, 7, 'enterprise', 1)`.execute(db);
  for (const [id, account] of [
    ['a1', 'a1'],
    ['a2', 'a2'],
  ] as const) {
    await sql`insert into organisations (id, name, created_at) values (${id}, 'Personal', ${AT})`.execute(db);
    await sql`insert into organisation_members (organisation_id, account_id, role, created_at)
              values (${id}, ${account}, 'owner', ${AT})`.execute(db);
  }
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at, created_by)
            values ('k1', 'a1', 'n', 'h1', 'h', ${AT}, 'a1'), ('k2', 'a2', 'n', 'h2', 'h', ${AT}, 'a2')`.execute(db);
  await sql`insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key,
              created_at)
            values ('l1', 'a1', 'topup', ${BIG_BALANCE.toString()}, ${BIG_BALANCE.toString()}, 'credit:1', ${AT}),
                   ('l2', 'a2', 'redemption', 7, 7, 'redeem:1', ${AT})`.execute(db);
  await sql`insert into redemption_codes (code_hash, amount_nano, created_at, redeemed_by, redeemed_at)
            values ('c1', 7, ${AT}, 'a2', ${AT})`.execute(db);
  await sql`insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day,
              max_output_tokens, created_at, expires_at)
            values ('r_live', 'a1', 'k1', 5000, 56, ${DAY}, 100, ${AT}, ${AT + 60_000})`.execute(db);
  await sql`insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens,
              cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms,
              created_at, raw_usage, cost_nano)
            values ('r_old', 'a1', 'k1', 'alpha-sonnet-5', 'alpha', 500, 0, 0, 300, 0, 'ok', 0, 3, ${AT + 1},
              null, 0)`.execute(db);
  await sql`insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
              cache_write_tokens, output_tokens, reasoning_tokens, cost_nano)
            values ('a1', ${DAY}, 'alpha-sonnet-5', 'k1', 1, 500, 0, 0, 300, 0, 0)`.execute(db);
  await sql`insert into stored_responses (id, account_id, created_at, response, input_items)
            values ('resp_1', 'a1', ${AT}, '{}', '[]')`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0016-organisation-wallets: $name', ({ create }) => {
  it("moves every account's wallet and tier to its personal organisation, to the unit", async () => {
    const database = await databaseBefore(create, '0016-organisation-wallets', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        // 0016 and every migration after it (later work adds theirs).
        expect(await storage.migrate()).toEqual(Object.keys(allMigrations).filter((name) => !BEFORE.includes(name)));
        expect(await storage.billing.balance('a1')).toEqual({
          balanceNano: BIG_BALANCE,
          reservedNano: 5000n,
          freeDay: DAY,
          freeUsedTokens: 1234,
          freeReservedTokens: 56,
        });
        expect((await storage.billing.balance('a2'))?.balanceNano).toBe(7n);
        expect(await storage.tierUpgrades.state('a1')).toMatchObject({
          tier: 'pro',
          grantedTier: 'standard',
          boughtTier: 'pro',
          boughtUntil: BOUGHT_UNTIL,
          renews: false,
          balanceNano: BIG_BALANCE,
          reservedNano: 5000n,
        });
        expect(await storage.tierUpgrades.state('a2')).toMatchObject({ tier: 'enterprise', grantedTier: 'enterprise' });
        // The renewal sweeper finds the bought period on the organisation.
        expect(await storage.tierUpgrades.periodsEnded(BOUGHT_UNTIL, 10)).toEqual(['a1']);
        // The ledger still sums to every balance.
        expect(await storage.billing.verifyLedger()).toEqual([]);

        // The disabled person's personal organisation is disabled: its keys are refused as they were.
        expect((await storage.accounts.findById('a2'))?.disabled).toBe(true);
        expect((await storage.apiKeys.findByHashWithOrganisation('h2'))?.organisation).toEqual({
          id: 'a2',
          name: 'Personal',
          tier: 'enterprise',
          disabled: true,
        });
        expect((await storage.apiKeys.findByHashWithOrganisation('h1'))?.organisation).toMatchObject({
          tier: 'pro',
          disabled: false,
        });
        expect(await storage.accounts.findById('a1')).toMatchObject({ tier: 'pro', disabled: false });

        // Every row of the tables whose foreign key moved is still there.
        expect((await storage.usage.listByAccount('a1', 10)).map((record) => record.requestId)).toEqual(['r_old']);
        expect((await storage.billing.ledger('a1', 10)).map((entry) => entry.id)).toEqual(['l1']);
        expect(await storage.billing.holds('a1', DAY, 1_000_000)).toMatchObject({ holds: 1 });
        expect(await storage.responses.get('a1', 'resp_1', 0)).not.toBeNull();
        expect((await storage.apiKeys.listByAccount('a1')).map((key) => key.id)).toEqual(['k1']);
      } finally {
        await storage.close();
      }

      const check = database.kysely();
      try {
        // The columns left accounts.
        await expect(sql`select balance_nano from accounts`.execute(check)).rejects.toThrow();
        await expect(sql`select tier from accounts`.execute(check)).rejects.toThrow();
        const code = await sql<{ redeemed_by: string }>`select redeemed_by from redemption_codes`.execute(check);
        expect(code.rows).toEqual([{ redeemed_by: 'a2' }]);
        const daily = await sql<{ requests: number | string }>`select requests from usage_daily`.execute(check);
        expect(daily.rows.map((row) => Number(row.requests))).toEqual([1]);
      } finally {
        await check.destroy();
      }

      const after = await openStorage(database.url, database.options);
      try {
        // A non-personal organisation's key is stored (the foreign key names organisations now)...
        await after.organisations.create(
          { id: 'org_team', name: 'Team', billingName: null, billingAddress: null, createdAt: AT + 30 },
          'a1',
        );
        const key = { name: 'team', keyHash: 'h3', hint: 'h', createdAt: AT + 31, expiresAt: null, createdBy: 'a1' };
        await after.apiKeys.create({ ...key, id: 'k3', accountId: 'org_team' });
        expect((await after.apiKeys.findByHashWithOrganisation('h3'))?.organisation).toEqual({
          id: 'org_team',
          name: 'Team',
          tier: 'standard',
          disabled: false,
        });
        // ...and one of an organisation that does not exist is refused by the database.
        await expect(
          after.apiKeys.create({ ...key, id: 'k4', keyHash: 'h4', accountId: 'org_missing' }),
        ).rejects.toThrow();
      } finally {
        await after.close();
      }
    } finally {
      await database.drop();
    }
  });
});
