import { FULL_PERMISSIONS } from './key-permission-types.js';
/**
 * The storage contract: one set of cases, run against SQLite (a temp file) and the real PostgreSQL
 * (a fresh random schema, dropped afterwards). PostgreSQL is required: if it is unreachable the
 * suite fails, it is never skipped. Point TOLLGATE_TEST_POSTGRES_URL elsewhere if needed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALL_MIGRATIONS,
  postgresBackend,
  sqliteBackend,
  type TestDatabase,
} from '../../test/helpers/storage-backends.js';
import {
  DuplicateEmailError,
  TextWithNulError,
  type NewAccount,
  type NewApiKey,
  type Storage,
  type UsageRecord,
} from './types.js';
import { costing } from '../../test/helpers/settlement-pricers.js';

/** Unique per call, so cases never see each other's rows in the shared database. */
const uniqueId = (prefix: string): string => `${prefix}-${randomUUID()}`;

function newAccount(overrides: Partial<NewAccount> = {}): NewAccount {
  const id = uniqueId('acct');
  return {
    id,
    email: `User.${id}@Example.COM`,
    passwordHash: 'scrypt$hash',
    role: 'user',
    tier: 'free',
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

function newKey(accountId: string, overrides: Partial<NewApiKey> = {}): NewApiKey {
  const id = uniqueId('key');
  return {
    id,
    accountId,
    name: 'default',
    keyHash: `hash-${id}`,
    hint: 'sk-tg-…abcd',
    createdAt: 1_700_000_000_000,
    expiresAt: null,
    permissions: FULL_PERMISSIONS,
    ...overrides,
  };
}

function newUsage(accountId: string, apiKeyId: string, overrides: Partial<UsageRecord> = {}): UsageRecord {
  return {
    requestId: uniqueId('req'),
    accountId,
    apiKeyId,
    model: 'gpt-4o-mini',
    family: 'openai',
    inputTokens: 120,
    cacheReadTokens: 30,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 45,
    reasoningTokens: 10,
    status: 'ok',
    stream: true,
    latencyMs: 812,
    createdAt: 1_700_000_000_000,
    rawUsage: '{"prompt_tokens":150}',
    costNano: 0n,
    freeTokens: 0,
    unbilledNano: 0n,
    unbilledTokens: 0,
    ...overrides,
  };
}

describe.each([sqliteBackend, postgresBackend])('storage contract: $name', (backend) => {
  let database: TestDatabase;
  let storage: Storage;
  let firstMigration: string[];

  beforeAll(async () => {
    database = await backend.createDatabase();
    storage = await database.open();
    firstMigration = await storage.migrate();
  });

  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  /** Usage rows are written by settlement; a free one (no charge) is the plain record. */
  async function record(usage: UsageRecord): Promise<boolean> {
    const result = await storage.billing.settle({ freeAllowanceTokens: 0, usage, price: costing(0n) });
    return result.settled;
  }

  /** An account with one key, the usual starting point. */
  async function accountWithKey() {
    const account = await storage.accounts.create(newAccount());
    const key = await storage.apiKeys.create(newKey(account.id));
    return { account, key };
  }

  describe('migrations', () => {
    it('applies every migration once; a second run is a no-op', async () => {
      expect(storage.dialect).toBe(backend.name);
      expect(firstMigration).toEqual(ALL_MIGRATIONS);
      expect(await storage.migrate()).toEqual([]);
    });

    it('is safe when several sessions migrate a fresh database at once', async () => {
      const fresh = await backend.createDatabase();
      try {
        const results = await fresh.migrateConcurrently(3);
        expect(results.flat()).toEqual(ALL_MIGRATIONS);
        const migrated = await fresh.open();
        try {
          expect(await migrated.migrate()).toEqual([]);
          expect(await migrated.accounts.create(newAccount())).toMatchObject({ disabled: false });
        } finally {
          await migrated.close();
        }
      } finally {
        await fresh.drop();
      }
    });
  });

  describe('accounts', () => {
    it('creates and finds by id and by email, case-insensitively', async () => {
      const input = newAccount({ role: 'admin', tier: 'pro' });
      const created = await storage.accounts.create(input);
      expect(created).toEqual({ ...input, disabled: false });
      expect(await storage.accounts.findById(input.id)).toEqual(created);
      expect(await storage.accounts.findByEmail(input.email.toUpperCase())).toEqual(created);
      expect(await storage.accounts.findByEmail(input.email.toLowerCase())).toEqual(created);
      expect(await storage.accounts.findById('missing')).toBeNull();
      expect(await storage.accounts.findByEmail('nobody@example.com')).toBeNull();
    });

    it('rejects an email that differs only in case with DuplicateEmailError, creating nothing', async () => {
      const first = await storage.accounts.create(newAccount());
      const second = newAccount({ email: first.email.toLowerCase() });
      await expect(storage.accounts.create(second)).rejects.toBeInstanceOf(DuplicateEmailError);
      expect(await storage.accounts.findById(second.id)).toBeNull();
      expect((await storage.accounts.findByEmail(first.email))?.id).toBe(first.id);
    });

    it('changes the tier of an existing account only', async () => {
      const account = await storage.accounts.create(newAccount());
      expect(await storage.accounts.setTier(account.id, 'enterprise')).toBe(true);
      expect((await storage.accounts.findById(account.id))?.tier).toBe('enterprise');
      expect(await storage.accounts.setTier('missing', 'pro')).toBe(false);
    });

    it('does not report a duplicate id as a duplicate email', async () => {
      const first = await storage.accounts.create(newAccount());
      const error: unknown = await storage.accounts
        .create(newAccount({ id: first.id }))
        .catch((caught: unknown) => caught);
      expect(error instanceof Error && !(error instanceof DuplicateEmailError)).toBe(true);
    });
  });

  describe('text with a NUL character (PostgreSQL cannot store U+0000; both backends refuse it alike)', () => {
    it('refuses an account whose email holds one, creating nothing; a lookup by such an email is refused too', async () => {
      const input = newAccount();
      const withNul = { ...input, email: `nul\u0000${input.email}` };
      await expect(storage.accounts.create(withNul)).rejects.toBeInstanceOf(TextWithNulError);
      expect(await storage.accounts.findById(input.id)).toBeNull();
      await expect(storage.accounts.findByEmail(withNul.email)).rejects.toBeInstanceOf(TextWithNulError);
      await expect(storage.accounts.listWithBalances({ query: 'a\u0000', limit: 5 })).rejects.toBeInstanceOf(
        TextWithNulError,
      );
    });

    it('refuses a key whose name holds one, and a rotation to such a name, changing nothing', async () => {
      const { account, key } = await accountWithKey();
      const named = newKey(account.id, { name: 'my\u0000key' });
      await expect(storage.apiKeys.create(named)).rejects.toBeInstanceOf(TextWithNulError);
      expect(await storage.apiKeys.findById(account.id, named.id)).toBeNull();
      const replacement = newKey(account.id, { name: '\u0000' });
      await expect(storage.apiKeys.rotate(account.id, key.id, replacement, 1_800_000_000_000)).rejects.toBeInstanceOf(
        TextWithNulError,
      );
      expect(await storage.apiKeys.findById(account.id, key.id)).toMatchObject({ revokedAt: null });
      expect((await storage.apiKeys.listByAccount(account.id)).map((listed) => listed.id)).toEqual([key.id]);
    });

    it('stores text with other control characters and any other Unicode as given', async () => {
      const { account } = await accountWithKey();
      const name = 'tab\there, bell\u0007, emoji \u{1F600}, RTL \u202e, replacement \ufffd';
      const key = await storage.apiKeys.create(newKey(account.id, { name }));
      expect((await storage.apiKeys.findById(account.id, key.id))?.name).toBe(name);
    });
  });

  describe('api keys', () => {
    it('creates a key and finds it by hash with its organisation in one lookup', async () => {
      const { account, key } = await accountWithKey();
      expect(key).toMatchObject({ revokedAt: null, lastUsedAt: null });
      const found = await storage.apiKeys.findByHashWithOrganisation(key.keyHash);
      // The key of a person's personal organisation, which has the account's id and tier.
      expect(found).toMatchObject({
        key,
        organisation: { id: account.id, name: 'Personal', tier: account.tier, disabled: false },
      });
      // Where the lookup also reads the organisation's money (PostgreSQL's admission hint), it is the organisation's.
      if (found?.money !== undefined)
        expect(found.money).toEqual({ balance: 0n, reserved: 0n, freeDay: 0, freeUsed: 0, freeReserved: 0 });
      expect(await storage.apiKeys.findById(account.id, key.id)).toEqual(key);
      expect(await storage.apiKeys.findByHashWithOrganisation('unknown-hash')).toBeNull();
    });

    it('round-trips expiry, including times beyond 32 bits, as numbers', async () => {
      const { account } = await accountWithKey();
      const expiresAt = Date.UTC(2100, 0, 1);
      const key = await storage.apiKeys.create(newKey(account.id, { expiresAt }));
      const found = await storage.apiKeys.findById(account.id, key.id);
      expect(found?.expiresAt).toBe(expiresAt);
      expect(typeof found?.createdAt).toBe('number');
    });

    it('refuses a second key with the same hash', async () => {
      const { account, key } = await accountWithKey();
      await expect(storage.apiKeys.create(newKey(account.id, { keyHash: key.keyHash }))).rejects.toThrow();
    });

    it('lists only the account’s keys, newest first, revoked ones included', async () => {
      const { account, key: oldest } = await accountWithKey();
      const newest = await storage.apiKeys.create(newKey(account.id, { createdAt: oldest.createdAt + 2 }));
      const middle = await storage.apiKeys.create(newKey(account.id, { createdAt: oldest.createdAt + 1 }));
      await storage.apiKeys.revoke(account.id, middle.id, 1_800_000_000_000);
      await accountWithKey(); // another account's key must not appear
      const ids = (await storage.apiKeys.listByAccount(account.id)).map((key) => key.id);
      expect(ids).toEqual([newest.id, middle.id, oldest.id]);
      expect(await storage.apiKeys.listByAccount('missing')).toEqual([]);
    });

    it('revokes once, only for the owning account', async () => {
      const { account, key } = await accountWithKey();
      const other = await accountWithKey();
      expect(await storage.apiKeys.revoke(other.account.id, key.id, 5)).toBe(false);
      expect(await storage.apiKeys.findById(other.account.id, key.id)).toBeNull();
      expect((await storage.apiKeys.findById(account.id, key.id))?.revokedAt).toBeNull();
      expect(await storage.apiKeys.revoke(account.id, key.id, 1_800_000_000_000)).toBe(true);
      expect(await storage.apiKeys.revoke(account.id, key.id, 1_800_000_000_001)).toBe(false);
      expect((await storage.apiKeys.findById(account.id, key.id))?.revokedAt).toBe(1_800_000_000_000);
      expect((await storage.apiKeys.findByHashWithOrganisation(key.keyHash))?.key.revokedAt).toBe(1_800_000_000_000);
    });

    it('rotates in one step: old key revoked, replacement active', async () => {
      const { account, key } = await accountWithKey();
      const replacement = newKey(account.id, { createdAt: key.createdAt + 10 });
      const rotated = await storage.apiKeys.rotate(account.id, key.id, replacement, 1_800_000_000_000);
      expect(rotated).toEqual({
        ...replacement,
        createdBy: null,
        projectId: key.projectId,
        revokedAt: null,
        lastUsedAt: null,
        spend: { periodStart: 0, usedNano: 0n, reservedNano: 0n },
        limits: [],
      });
      expect((await storage.apiKeys.findById(account.id, key.id))?.revokedAt).toBe(1_800_000_000_000);
      expect((await storage.apiKeys.findByHashWithOrganisation(replacement.keyHash))?.key).toEqual(rotated);
      expect((await storage.apiKeys.listByAccount(account.id)).map((k) => k.id)).toEqual([replacement.id, key.id]);
    });

    it('rotating a revoked or foreign key returns null and creates nothing', async () => {
      const { account, key } = await accountWithKey();
      const other = await accountWithKey();
      const foreign = newKey(other.account.id);
      expect(await storage.apiKeys.rotate(other.account.id, key.id, foreign, 7)).toBeNull();
      expect(await storage.apiKeys.findByHashWithOrganisation(foreign.keyHash)).toBeNull();
      expect((await storage.apiKeys.findById(account.id, key.id))?.revokedAt).toBeNull();

      await storage.apiKeys.revoke(account.id, key.id, 8);
      const late = newKey(account.id);
      expect(await storage.apiKeys.rotate(account.id, key.id, late, 9)).toBeNull();
      expect(await storage.apiKeys.findByHashWithOrganisation(late.keyHash)).toBeNull();
      expect((await storage.apiKeys.findById(account.id, key.id))?.revokedAt).toBe(8);
      expect(await storage.apiKeys.listByAccount(account.id)).toHaveLength(1);
    });

    it('lets only one of two concurrent rotations of a key succeed', async () => {
      const { account, key } = await accountWithKey();
      const results = await Promise.all([
        storage.apiKeys.rotate(account.id, key.id, newKey(account.id), 11),
        storage.apiKeys.rotate(account.id, key.id, newKey(account.id), 12),
      ]);
      expect(results.filter((result) => result !== null)).toHaveLength(1);
      expect(await storage.apiKeys.listByAccount(account.id)).toHaveLength(2);
    });

    it('records the last use, never moving it backwards', async () => {
      const { account, key } = await accountWithKey();
      await storage.apiKeys.touchLastUsed(key.id, 2_000);
      expect((await storage.apiKeys.findById(account.id, key.id))?.lastUsedAt).toBe(2_000);
      await storage.apiKeys.touchLastUsed(key.id, 1_000);
      expect((await storage.apiKeys.findById(account.id, key.id))?.lastUsedAt).toBe(2_000);
      await storage.apiKeys.touchLastUsed('missing', 3_000);
    });
  });

  describe('usage records', () => {
    it('records once per request id; a duplicate returns false and changes nothing', async () => {
      const { account, key } = await accountWithKey();
      const usage = newUsage(account.id, key.id);
      expect(await record(usage)).toBe(true);
      expect(await record({ ...usage, outputTokens: 999, status: 'upstream_error' })).toBe(false);
      expect(await storage.usage.listByAccount(account.id, 10)).toEqual([usage]);
    });

    it('round-trips the web searches and fetches a reply used, and their cost', async () => {
      const { account, key } = await accountWithKey();
      const searched = newUsage(account.id, key.id, {
        webSearchRequests: 3,
        webFetchRequests: 1,
        serverToolNano: 30_000_000n,
      });
      await record(searched);
      expect(await storage.usage.listByAccount(account.id, 10)).toEqual([searched]);
    });

    it('round-trips booleans and nullable fields', async () => {
      const { account, key } = await accountWithKey();
      const streamed = newUsage(account.id, key.id, { stream: true, rawUsage: '{"a":1}', createdAt: 2 });
      const plain = newUsage(account.id, key.id, { stream: false, rawUsage: null, createdAt: 1 });
      await record(streamed);
      await record(plain);
      expect(await storage.usage.listByAccount(account.id, 10)).toEqual([streamed, plain]);
    });

    it('lists the account’s records newest first, up to the limit', async () => {
      const { account, key } = await accountWithKey();
      const other = await accountWithKey();
      const records = [3, 1, 2].map((minute) => newUsage(account.id, key.id, { createdAt: minute * 60_000 }));
      for (const usage of records) await record(usage);
      await record(newUsage(other.account.id, other.key.id, { createdAt: 10 * 60_000 }));
      const listed = await storage.usage.listByAccount(account.id, 2);
      expect(listed.map((record) => record.createdAt)).toEqual([180_000, 120_000]);
      expect(await storage.usage.listByAccount(account.id, 0)).toEqual([]);
    });

    it('rejects a record for an unknown account (foreign keys are enforced)', async () => {
      const { key } = await accountWithKey();
      await expect(record(newUsage('missing-account', key.id))).rejects.toThrow();
    });
  });
});
