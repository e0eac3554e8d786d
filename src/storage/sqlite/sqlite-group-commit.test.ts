/**
 * SQLite's group commit (sqlite-group-commit.ts): writes queued in one event-loop turn commit together, each in its
 * own savepoint, and writes still queued when the handle closes are committed first.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteBackend, type TestDatabase } from '../../../test/helpers/storage-backends.js';
import type { ReserveInput } from '../billing-types.js';
import type { Storage, UsageRecord } from '../types.js';
import { openStorage } from '../open-storage.js';
import { KEY_COLUMNS } from '../api-key-repository.js';
import { fundedAccountIn } from '../../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';

const NOW = 20_000 * 86_400_000;

describe('SQLite group commit', () => {
  let database: TestDatabase;
  let storage: Storage;
  let ids: { accountId: string; keyId: string };

  beforeEach(async () => {
    database = await sqliteBackend.createDatabase();
    storage = await database.open();
    await storage.migrate();
    ids = await fundedAccountIn(storage, 100_000n);
  });

  afterEach(async () => {
    await storage.close();
    await database.drop();
  });

  const reserveInput = (holdNano: bigint): ReserveInput => ({
    requestId: `req-${randomUUID()}`,
    accountId: ids.accountId,
    apiKeyId: ids.keyId,
    day: 20_000,
    freeAllowanceTokens: 0,
    createdAt: NOW,
    expiresAt: NOW + 60_000,
    plan: (state) =>
      state.availableNano >= holdNano
        ? { admitted: true, holdNano, freeTokens: 0, maxOutputTokens: 10 }
        : { admitted: false, reason: 'empty' },
  });

  const usageFor = (requestId: string): UsageRecord => ({
    requestId,
    accountId: ids.accountId,
    apiKeyId: ids.keyId,
    model: 'beta-5.4',
    family: 'beta',
    inputTokens: 3,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: 4,
    reasoningTokens: 0,
    status: 'ok',
    stream: false,
    latencyMs: 1,
    createdAt: NOW,
    rawUsage: null,
    costNano: 0n,
    freeTokens: 0,
    unbilledNano: 0n,
  });
  const price = costing(1_000n);

  it('a write that fails in a batch is rolled back alone; the others commit', async () => {
    // All issued in one turn, so they share one transaction: two admissions, a plan that overreaches, a double settlement.
    const overreaching: ReserveInput = {
      ...reserveInput(0n),
      plan: () => ({ admitted: true, holdNano: 10n ** 12n, freeTokens: 0, maxOutputTokens: 1 }),
    };
    const first = storage.billing.reserve(reserveInput(5_000n));
    const bad = storage.billing.reserve(overreaching);
    const second = storage.billing.reserve(reserveInput(5_000n));
    const settledRequest = `req-${randomUUID()}`;
    const once = storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(settledRequest), price });
    const twice = storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(settledRequest), price });
    await expect(bad).rejects.toThrow(/exceeds/);
    expect(await first).toMatchObject({ admitted: true });
    expect(await second).toMatchObject({ admitted: true });
    expect(await once).toEqual({
      settled: true,
      chargedNano: 1_000n,
      unbilledNano: 0n,
      unbilledTokens: 0,
      freeTokensUsed: 0,
    });
    expect(await twice).toEqual({ settled: false, reason: 'already_settled' });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 99_000n, reservedNano: 10_000n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('writes still queued when the storage closes are committed before it closes', async () => {
    const requestId = `req-${randomUUID()}`;
    const pending = storage.billing.settle({ freeAllowanceTokens: 0, usage: usageFor(requestId), price });
    await storage.close();
    expect(await pending).toMatchObject({ settled: true, chargedNano: 1_000n });
    storage = await database.open();
    expect(await storage.usage.listByAccount(ids.accountId, 10)).toEqual([
      expect.objectContaining({ requestId, costNano: 1_000n }),
    ]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 99_000n });
  });
});

describe('SQLite key lookup', () => {
  it('reads every column of api_keys (its row comes back as an array, read by position)', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'tollgate-key-columns-'));
    try {
      const path = join(directory, 'tollgate.db');
      const storage = await openStorage(`sqlite:${path}`);
      await storage.migrate();
      await storage.close();
      const database = new Database(path, { readonly: true });
      const columns = (
        database.prepare("select name from pragma_table_info('api_keys')").all() as { name: string }[]
      ).map((row) => row.name);
      database.close();
      expect([...KEY_COLUMNS].sort()).toEqual([...columns].sort());
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('SQLite key lookup (hot path)', () => {
  let database: TestDatabase;
  let storage: Storage;

  beforeEach(async () => {
    database = await sqliteBackend.createDatabase();
    storage = await database.open();
    await storage.migrate();
  });

  afterEach(async () => {
    await storage.close();
    await database.drop();
  });

  it('reads the key and its account as the Kysely path does: text with quotes and non-ASCII, nulls, a spend limit at 2^53 - 1; a revocation at once', async () => {
    const account = await storage.accounts.create({
      id: `acct-${randomUUID()}`,
      email: `ü-${randomUUID()}@example.com`,
      passwordHash: 'scrypt$"x"\\y',
      role: 'user',
      tier: 'standard',
      createdAt: NOW,
    });
    const keyHash = randomUUID();
    const key = await storage.apiKeys.create({
      id: `key-${randomUUID()}`,
      accountId: account.id,
      name: 'Ünïcode "key" \\ ✓ 🔑',
      keyHash,
      hint: 'sk-tg-…abcd',
      createdAt: NOW,
      expiresAt: NOW + 1,
      permissions: {
        scopes: ['models:use'],
        models: ['beta', 'alpha-1'],
        spendLimit: { limitNano: 9_007_199_254_740_991n, period: 'month' },
        rateLimit: { requestsPerMinute: 7, tokensPerMinute: null },
      },
    });
    const found = await storage.apiKeys.findByHashWithOrganisation(keyHash);
    expect(found?.key).toEqual(await storage.apiKeys.findById(account.id, key.id));
    expect(found?.key.permissions.spendLimit?.limitNano).toBe(9_007_199_254_740_991n);
    expect(found?.organisation).toEqual({ id: account.id, name: 'Personal', tier: account.tier, disabled: false });
    expect(await storage.apiKeys.findByHashWithOrganisation('no such hash')).toBeNull();
    await storage.apiKeys.revoke(account.id, key.id, NOW + 5);
    expect((await storage.apiKeys.findByHashWithOrganisation(keyHash))?.key.revokedAt).toBe(NOW + 5);
  });
});
