/**
 * SQLite's live holds in memory (docs/decisions/0019-sqlite-holds-in-memory.md), seen by everything that spends or
 * shows the balance: a tier bought or a debit never takes what they hold, even when a hold is asked for while the
 * purchase's transaction is open, and the views count them as the database's counters were counted before. Holds a
 * previous version stored are settled or released once after the upgrade.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  billingContractFixture,
  DAY,
  fundedAccountIn,
  holdUpTo,
  NOW,
  plainUsage,
} from '../../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';
import { sqliteBackend } from '../../../test/helpers/storage-backends.js';
import { openStorage } from '../open-storage.js';
import type { Storage } from '../types.js';

const upTo = (want: bigint) => holdUpTo(want, 10);

describe('SQLite: holds in memory count wherever the balance is spent or shown', () => {
  const fixture = billingContractFixture(sqliteBackend);
  const { fundedAccount, reserveInput } = fixture;

  const buy = (accountId: string, amountNano: bigint) =>
    fixture.storage.tierUpgrades.change(accountId, () => ({
      change: {
        tier: 'pro',
        charge: { amountNano, idempotencyKey: `tier-${amountNano}-${accountId}`, note: 'pro', at: NOW },
      },
    }));

  it('a tier purchase cannot spend what live holds take; one exactly within the rest is charged', async () => {
    const ids = await fundedAccount(10_000n);
    const held = await fixture.storage.billing.reserve(reserveInput(ids, upTo(4_000n)));
    expect(held).toMatchObject({ admitted: true });
    expect(await fixture.storage.tierUpgrades.state(ids.accountId)).toMatchObject({
      balanceNano: 10_000n,
      reservedNano: 4_000n,
    });
    expect(await buy(ids.accountId, 6_001n)).toMatchObject({ applied: false, refused: 'insufficient_balance' });
    expect(await buy(ids.accountId, 6_000n)).toMatchObject({ applied: true, state: { balanceNano: 4_000n } });
    expect(await fixture.storage.billing.verifyLedger()).toEqual([]);
  });

  it('a hold asked for while a purchase is deciding waits for its commit, and sees the money gone', async () => {
    const ids = await fundedAccount(10_000n);
    let asked: Promise<unknown> | undefined;
    const bought = await fixture.storage.tierUpgrades.change(ids.accountId, (state) => {
      // Inside the purchase's transaction: the admission must not slip in between its check and its charge.
      asked = fixture.storage.billing.reserve(reserveInput(ids, upTo(3_000n)));
      return {
        change: {
          tier: 'pro',
          charge: {
            amountNano: state.balanceNano - state.reservedNano,
            idempotencyKey: `all-${ids.accountId}`,
            note: 'pro',
            at: NOW,
          },
        },
      };
    });
    expect(bought).toMatchObject({ applied: true, state: { balanceNano: 0n } });
    expect(await asked).toMatchObject({ admitted: false });
    expect(await fixture.storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 0n, reservedNano: 0n });
  });

  it('a debit takes at most the balance less what live holds take', async () => {
    const ids = await fundedAccount(10_000n);
    await fixture.storage.billing.reserve(reserveInput(ids, upTo(7_000n)));
    const debited = await fixture.storage.billing.credit({
      accountId: ids.accountId,
      kind: 'adjustment',
      amountNano: -9_000n,
      idempotencyKey: `debit-${ids.accountId}`,
      note: null,
      at: NOW,
    });
    expect(debited).toEqual({ applied: true, balanceNano: 7_000n });
  });

  it("the views count live holds: the account's, its holds, its limits' and its keys'", async () => {
    const ids = await fundedAccount(10_000n);
    await fixture.storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'key',
      scopeId: ids.keyId,
      period: 'month',
      limitNano: 8_000n,
      at: NOW,
    });
    await fixture.storage.billing.reserve(reserveInput(ids, upTo(2_500n)));
    await fixture.storage.billing.reserve(reserveInput(ids, upTo(1_500n)));
    expect(await fixture.storage.billing.balance(ids.accountId)).toMatchObject({ reservedNano: 4_000n });
    expect(await fixture.storage.billing.holds(ids.accountId, 0, 0)).toMatchObject({ holds: 2, reservedNano: 4_000n });
    expect(await fixture.storage.spendLimits.list(ids.accountId, NOW)).toEqual([
      expect.objectContaining({ scope: 'key', reservedNano: 4_000n }),
    ]);
    const key = await fixture.storage.apiKeys.findById(ids.accountId, ids.keyId);
    expect(key?.spend.reservedNano).toBe(4_000n);
  });
});

describe('SQLite: holds a previous version stored in the database', () => {
  let directory: string;
  let storage: Storage;
  let raw: BetterSqlite3.Database;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tollgate-stored-holds-'));
    const file = join(directory, 'tollgate.db');
    storage = await openStorage(`sqlite:${file}`);
    await storage.migrate();
    raw = new BetterSqlite3(file);
  });

  afterAll(async () => {
    raw?.close();
    await storage?.close();
    await rm(directory, { recursive: true, force: true });
  });

  /** A hold as the previous version wrote it: its row, the organisation's counters and its limit's part. */
  async function storedHold(holdNano: bigint, expiresAt: number) {
    const ids = await fundedAccountIn(storage, 10_000n);
    const limit = await storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'month',
      limitNano: 8_000n,
      at: NOW,
    });
    const requestId = `req-${randomUUID()}`;
    raw
      .prepare(
        `insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens,
           created_at, expires_at) values (?, ?, ?, ?, 0, ?, 100, ?, ?)`,
      )
      .run(requestId, ids.accountId, ids.keyId, holdNano, DAY, NOW, expiresAt);
    raw.prepare('update organisations set reserved_nano = reserved_nano + ? where id = ?').run(holdNano, ids.accountId);
    raw.prepare('update spend_limits set reserved_nano = reserved_nano + ? where id = ?').run(holdNano, limit.after.id);
    raw
      .prepare('insert into spend_limit_holds (request_id, limit_id, hold_nano) values (?, ?, ?)')
      .run(requestId, limit.after.id, holdNano);
    return { ids, requestId };
  }

  const reservedOf = async (accountId: string) => ({
    account: (await storage.billing.balance(accountId))!.reservedNano,
    limit: (await storage.spendLimits.list(accountId, NOW))[0]!.reservedNano,
  });

  it('its settlement claims it once: the counters it took are given back, the charge taken', async () => {
    const { ids, requestId } = await storedHold(3_000n, NOW + 60_000);
    expect(await reservedOf(ids.accountId)).toEqual({ account: 3_000n, limit: 3_000n });
    const settle = () =>
      storage.billing.settle({ usage: plainUsage(requestId, ids), price: costing(1_200n), freeAllowanceTokens: 0 });
    expect(await settle()).toMatchObject({ settled: true, chargedNano: 1_200n });
    expect(await settle()).toEqual({ settled: false, reason: 'already_settled' });
    expect(await reservedOf(ids.accountId)).toEqual({ account: 0n, limit: 0n });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 8_800n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('the sweeper releases it once expired', async () => {
    const { ids } = await storedHold(2_000n, NOW + 10);
    expect(await storage.billing.releaseExpiredReservations(NOW + 1_000)).toBe(1);
    expect(await storage.billing.releaseExpiredReservations(NOW + 1_000)).toBe(0);
    expect(await reservedOf(ids.accountId)).toEqual({ account: 0n, limit: 0n });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 10_000n });
  });
});
