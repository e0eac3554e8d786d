/**
 * Migration 0015-organisations on both backends, over data the schema before it wrote: every account becomes the
 * owner of an organisation that takes its id (a deleted account keeps the organisation for its ledger, with no
 * member), its sessions work in it and its keys name it as their creator; balances, keys, ledger and usage are
 * untouched. After it, a new account gets the same (personal organisation with its id, owner), and a session
 * resolves to its chosen organisation only while the person is a member of it.
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
const BEFORE = migrationsBefore('0015-organisations');

async function writeOldRows(db: Kysely<unknown>): Promise<void> {
  await sql`insert into accounts (id, email, email_normalized, password_hash, role, tier, created_at, balance_nano)
            values ('a1', 'A@x.io', 'a@x.io', 'x', 'user', 'standard', ${AT}, 1234567890123),
                   ('a2', 'b@x.io', 'b@x.io', 'x', 'user', 'standard', ${AT + 1}, 5)`.execute(db);
  await sql`update accounts set deleted_at = ${AT + 9} where id = 'a2'`.execute(db);
  await sql`insert into api_keys (id, account_id, name, key_hash, hint, created_at)
            values ('k1', 'a1', 'n', 'h', 'h', ${AT})`.execute(db);
  await sql`insert into sessions (id_hash, account_id, created_at, last_seen_at)
            values ('s1', 'a1', ${AT}, ${AT})`.execute(db);
  await sql`insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key,
              created_at)
            values ('l1', 'a1', 'topup', 1234567890123, 1234567890123, 'credit:1', ${AT})`.execute(db);
  await sql`insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens,
              cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms,
              created_at, raw_usage, cost_nano)
            values ('r_old', 'a1', 'k1', 'alpha-sonnet-5', 'alpha', 500, 0, 0, 300, 0, 'ok', 0, 3, ${AT + 1},
              null, 20250000)`.execute(db);
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('migration 0015-organisations: $name', ({ create }) => {
  it('makes every account the owner of an organisation with its id and keeps every row it had', async () => {
    const database = await databaseBefore(create, '0015-organisations', writeOldRows);
    try {
      const storage = await openStorage(database.url, database.options);
      try {
        expect(await storage.migrate()).toEqual(Object.keys(allMigrations).filter((name) => !BEFORE.includes(name)));
        const [personal] = await storage.organisations.membershipsOf('a1');
        expect(personal).toMatchObject({ role: 'owner', organisation: { id: 'a1', name: 'Personal', createdAt: AT } });
        expect(await storage.organisations.members('a1')).toEqual([
          {
            accountId: 'a1',
            email: 'A@x.io',
            role: 'owner',
            joinedAt: AT,
            provisionedBy: null,
            signIn: { passkeys: 0, ssoProviders: [], totp: false },
          },
        ]);
        // The deleted account's organisation stays for its ledger; nobody is in it.
        expect(await storage.organisations.findById('a2')).toMatchObject({ id: 'a2', name: 'Personal' });
        expect(await storage.organisations.members('a2')).toEqual([]);

        const session = await storage.sessions.findWithAccount('s1');
        expect(session?.session.organisationId).toBe('a1');
        expect(session?.membership).toMatchObject({ role: 'owner', organisation: { id: 'a1' } });
        expect((await storage.apiKeys.listByAccount('a1'))[0]).toMatchObject({ id: 'k1', createdBy: 'a1' });

        // Nothing else moved: the balance to the nano, the ledger, the usage.
        expect((await storage.billing.balance('a1'))?.balanceNano).toBe(1_234_567_890_123n);
        expect((await storage.billing.ledger('a1', 10)).map((entry) => entry.id)).toEqual(['l1']);
        expect((await storage.usage.listByAccount('a1', 10)).map((record) => record.requestId)).toEqual(['r_old']);

        // After it: a new person owns a personal organisation with their id, and only their memberships count.
        await storage.accounts.create({
          id: 'a3',
          email: 'c@x.io',
          passwordHash: 'x',
          role: 'user',
          tier: 'standard',
          createdAt: AT + 20,
        });
        expect(await storage.organisations.membershipsOf('a3')).toEqual([
          {
            role: 'owner',
            joinedAt: AT + 20,
            organisation: {
              id: 'a3',
              name: 'Personal',
              billingName: null,
              billingAddress: null,
              createdAt: AT + 20,
              signInPolicy: { requireSecondFactor: false, requiredSsoProviders: [] },
            },
          },
        ]);
        await storage.organisations.setSessionOrganisation('s1', 'a3');
        // Not a member of a3: the session falls back to the person's oldest organisation.
        expect((await storage.sessions.findWithAccount('s1'))?.membership?.organisation.id).toBe('a1');
        await storage.organisations.create(
          { id: 'org_team', name: 'Team', billingName: null, billingAddress: null, createdAt: AT + 30 },
          'a1',
        );
        await storage.organisations.setSessionOrganisation('s1', 'org_team');
        expect((await storage.sessions.findWithAccount('s1'))?.membership).toMatchObject({
          role: 'owner',
          organisation: { id: 'org_team', name: 'Team' },
        });
        expect((await storage.organisations.membershipsOf('a1')).map((m) => m.organisation.id)).toEqual([
          'a1',
          'org_team',
        ]);
      } finally {
        await storage.close();
      }
    } finally {
      await database.drop();
    }
  });
});
