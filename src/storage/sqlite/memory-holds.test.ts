/**
 * SQLite's live holds in memory (docs/decisions/0019-sqlite-holds-in-memory.md), seen by everything that spends or
 * shows the balance: a tier bought or a debit never takes what they hold, even when a hold is asked for while the
 * purchase's transaction is open, and the views count them as the database's counters were counted before.
 */
import { describe, expect, it } from 'vitest';
import { billingContractFixture, NOW } from '../../../test/helpers/billing-contract-fixture.js';
import { sqliteBackend } from '../../../test/helpers/storage-backends.js';
import type { AdmissionPlan, AdmissionState } from '../billing-types.js';

const upTo =
  (want: bigint) =>
  (state: AdmissionState): AdmissionPlan =>
    state.availableNano >= want
      ? { admitted: true, holdNano: want, freeTokens: 0, maxOutputTokens: 10 }
      : { admitted: false, reason: 'short' };

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
