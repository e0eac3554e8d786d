/**
 * An organisation's wallet shared by its members, on both backends' billing stores as the gateway opens them: two
 * people, each with a key they created in a team organisation, spend from its one wallet at once. The keys'
 * lookups name the team (not their creators), every admission and settlement lands on its row, no request passes
 * the balance, the ledger sums to it, and each person's own (personal) wallet is untouched.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { rawPostgresDatabase, rawSqliteDatabase } from '../../test/helpers/migration-databases.js';
import { DAY, NOW, plainUsage } from '../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { KeyService } from '../keys/key-service.js';
import { openStorage } from './open-storage.js';
import type { Storage } from './types.js';

const TEAM_FUNDS = 100_000n;
const HOLD = 4_000n;
const CHARGE = 3_000n;
const REQUESTS_PER_PERSON = 20;

async function person(storage: Storage, name: string) {
  return storage.accounts.create({
    id: `acct_${name}_${randomUUID()}`,
    email: `${name}-${randomUUID()}@example.com`,
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: NOW,
  });
}

async function credit(storage: Storage, accountId: string, amountNano: bigint): Promise<void> {
  await storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano,
    idempotencyKey: `topup-${randomUUID()}`,
    note: null,
    at: NOW,
  });
}

describe.each([
  { name: 'sqlite', create: rawSqliteDatabase },
  { name: 'postgres', create: rawPostgresDatabase },
])('billing contract, an organisation wallet two people spend from: $name', ({ create }) => {
  it("bills both people's keys to the organisation, concurrently, within its balance", async () => {
    const database = await create();
    const db = database.kysely();
    let storage: Storage | undefined;
    try {
      storage = await openStorage(database.url, database.options);
      await storage.migrate();
      const alice = await person(storage, 'alice');
      const bob = await person(storage, 'bob');
      await credit(storage, alice.id, 1_000n);
      await credit(storage, bob.id, 2_000n);
      const team = await storage.organisations.create(
        { id: `org_${randomUUID()}`, name: 'Team', billingName: null, billingAddress: null, createdAt: NOW },
        alice.id,
      );
      // Bob joins as a developer: invitations are not this suite's business, so the membership is written directly.
      await sql`insert into organisation_members (organisation_id, account_id, role, created_at)
                values (${team.id}, ${bob.id}, 'developer', ${NOW})`.execute(db);
      await credit(storage, team.id, TEAM_FUNDS);

      const keys = new KeyService(storage.apiKeys, () => NOW);
      const aliceKey = await keys.create(team.id, alice.id, { name: 'alice' });
      const bobKey = await keys.create(team.id, bob.id, { name: 'bob' });
      expect(aliceKey.record).toMatchObject({ accountId: team.id, createdBy: alice.id });
      expect(bobKey.record).toMatchObject({ accountId: team.id, createdBy: bob.id });
      const callers = await Promise.all([keys.authenticate(aliceKey.secret), keys.authenticate(bobKey.secret)]);
      for (const caller of callers) {
        expect(caller.organisation).toEqual({ id: team.id, name: 'Team', tier: 'standard', disabled: false });
      }

      // Taking turns, so both people's requests are in flight together.
      const requests = Array.from({ length: REQUESTS_PER_PERSON }, () =>
        callers.map((caller) => ({ caller, requestId: `req_${randomUUID()}` })),
      ).flat();
      const billing = storage.billing;
      const outcomes = await Promise.all(
        requests.map(async ({ caller, requestId }) => {
          const reserved = await billing.reserve({
            requestId,
            accountId: caller.organisation.id,
            apiKeyId: caller.key.id,
            day: DAY,
            freeAllowanceTokens: 0,
            createdAt: NOW,
            expiresAt: NOW + 60_000,
            plan: (state) =>
              state.availableNano >= HOLD
                ? { admitted: true, holdNano: HOLD, freeTokens: 0, maxOutputTokens: 100 }
                : { admitted: false, reason: 'insufficient' },
            ...(caller.money === undefined ? {} : { accountHint: caller.money }),
          });
          if (!reserved.admitted) return 0n;
          const usage = plainUsage(requestId, { accountId: caller.organisation.id, keyId: caller.key.id });
          const settled = await billing.settle({ freeAllowanceTokens: 0, usage, price: costing(CHARGE) });
          if (!settled.settled) throw new Error(`${requestId} did not settle`);
          return settled.chargedNano;
        }),
      );
      const charged = outcomes.reduce((sum, nano) => sum + nano, 0n);
      const billed = outcomes.filter((nano) => nano > 0n).length;
      // Some were admitted from each key and the wallet ran out before all 40 were: the limit was the team's.
      expect(billed).toBeGreaterThan(0);
      expect(billed).toBeLessThan(requests.length);
      expect(charged).toBe(CHARGE * BigInt(billed));

      const wallet = await storage.billing.balance(team.id);
      expect(wallet).toMatchObject({ balanceNano: TEAM_FUNDS - charged, reservedNano: 0n });
      expect(wallet!.balanceNano).toBeGreaterThanOrEqual(0n);
      expect(await storage.billing.verifyLedger()).toEqual([]);
      const ledger = await storage.billing.ledger(team.id, 100);
      expect(ledger.filter((entry) => entry.kind === 'usage')).toHaveLength(billed);
      const records = await storage.usage.listByAccount(team.id, 100);
      expect(records).toHaveLength(billed);
      // Both people's keys were billed, to the team and nobody else.
      expect(new Set(records.map((record) => record.apiKeyId))).toEqual(
        new Set([aliceKey.record.id, bobKey.record.id]),
      );

      // Each person's own wallet is as it was: nothing billed, nothing held.
      expect(await storage.billing.balance(alice.id)).toMatchObject({ balanceNano: 1_000n, reservedNano: 0n });
      expect(await storage.billing.balance(bob.id)).toMatchObject({ balanceNano: 2_000n, reservedNano: 0n });
      expect(await storage.usage.listByAccount(alice.id, 10)).toEqual([]);
      expect(await storage.usage.listByAccount(bob.id, 10)).toEqual([]);
    } finally {
      await storage?.close();
      await db.destroy();
      await database.drop();
    }
  });
});
