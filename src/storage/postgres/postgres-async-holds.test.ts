/**
 * Holds commit without waiting for the WAL flush, and nothing else does (docs/decisions/0020): on the real
 * PostgreSQL, triggers on every table a money write touches record `synchronous_commit` as each transaction sees it,
 * so every path is observed from inside its own transaction. Then what a lost hold leaves behind: a settlement
 * against no hold charges within the balance and every spend limit, and records the rest unbilled.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAY,
  fundedAccountIn,
  holdUpTo,
  NOW,
  plainUsage,
  reserveInput as reserveInputFor,
  type AccountIds,
  uniqueId,
} from '../../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';
import { dropPostgresSchema, POSTGRES_URL } from '../../../test/helpers/storage-backends.js';
import { planSliceGrant } from '../../billing/slice-grant.js';
import type { ReserveInput, ReserveResult, SliceInput } from '../billing-types.js';
import { billingStoreOf } from '../kysely-storage.js';
import { openStorage } from '../open-storage.js';
import type { Storage } from '../types.js';
import { PostgresBillingStore } from './postgres-billing-store.js';

const upTo = (want: bigint) => holdUpTo(want, 10);

/** The admitted request's id; a refusal fails the test. */
function heldId(result: ReserveResult): string {
  if (!result.admitted) throw new Error(`refused: ${result.reason}`);
  return result.reservation.requestId;
}

/** The tables a hold, a slice, a settlement or a top-up writes. */
const WATCHED = [
  'organisations',
  'reservations',
  'spend_limits',
  'spend_limit_holds',
  'usage_records',
  'ledger_entries',
];

describe('PostgreSQL: only transactions of holds commit asynchronously', () => {
  const schema = `tollgate_test_${randomBytes(6).toString('hex')}`;
  let storage: Storage;
  let hot: PostgresBillingStore;
  /** The test's own connection, in the storage's schema: the observers, and the hand that deletes a hold. */
  let admin: pg.Client;

  beforeAll(async () => {
    storage = await openStorage(POSTGRES_URL, { postgresSchema: schema });
    await storage.migrate();
    const store = billingStoreOf(storage);
    if (!(store instanceof PostgresBillingStore)) throw new Error('not the PostgreSQL billing store');
    hot = store;
    admin = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
    await admin.connect();
    await admin.query('create table commit_settings (backend int, setting text)');
    await admin.query(`create function record_commit_setting() returns trigger language plpgsql as $$
      begin
        insert into ${schema}.commit_settings values (pg_backend_pid(), current_setting('synchronous_commit'));
        return null;
      end $$`);
    for (const table of WATCHED) {
      await admin.query(`create trigger record_commit_setting after insert or update or delete on ${table}
        for each statement execute function record_commit_setting()`);
    }
  });

  afterAll(async () => {
    await admin?.end();
    await storage?.close();
    await dropPostgresSchema(schema);
  });

  /** The `synchronous_commit` each write transaction of `action` ran with, and the connections they ran on. */
  async function observed(action: () => Promise<unknown>): Promise<{ settings: string[]; backends: number[] }> {
    await admin.query('delete from commit_settings');
    await action();
    const { rows } = await admin.query<{ backend: number; setting: string }>(
      'select backend, setting from commit_settings',
    );
    return {
      settings: [...new Set(rows.map((row) => row.setting))].sort(),
      backends: [...new Set(rows.map((row) => row.backend))],
    };
  }

  const reserveInput = (ids: AccountIds, want: bigint): ReserveInput =>
    reserveInputFor(ids, upTo(want), {
      // As the key lookup read it: the hold's statement goes out in the caller's turn, batched with that turn's writes.
      accountHint: { balance: 1_000_000n, reserved: 0n, freeDay: DAY, freeUsed: 0, freeReserved: 0 },
    });

  const slice = (requestId: string, ids: AccountIds, tokens: number): SliceInput => ({
    requestId,
    accountId: ids.accountId,
    apiKeyId: ids.keyId,
    day: DAY,
    freeAllowanceTokens: 0,
    tokens,
    outputPriceNano: 10n,
    plan: (state) => planSliceGrant(tokens, 10n, state),
    expiresAt: NOW + 60_000,
  });

  const settle = (requestId: string, ids: AccountIds, nano: bigint) =>
    storage.billing.settle({
      usage: plainUsage(requestId, ids),
      price: costing(nano),
      freeAllowanceTokens: 0,
      heldFreeTokens: 0,
    });

  /** The setting the next statement on a batcher connection runs with (the last one used: they are taken last first). */
  async function nextStatementOnSameConnection(): Promise<{ backend: number; setting: string }> {
    const result = await hot.writes.run({
      accountId: 'none',
      name: 'probe_commit_setting',
      text: "select pg_backend_pid() as backend, current_setting('synchronous_commit') as setting",
      values: [],
      holdOnly: false,
    });
    return result.rows[0] as { backend: number; setting: string };
  }

  it('commits a hold taken by one statement asynchronously, and the connection is synchronous again after it', async () => {
    const ids = await fundedAccountIn(storage, 1_000_000n);
    const before = hot.paths.statement.reserve;
    const hold = await observed(() => storage.billing.reserve(reserveInput(ids, 1_000n)));
    expect(hot.paths.statement.reserve).toBe(before + 1);
    expect(hold.settings).toEqual(['off']);
    expect(await nextStatementOnSameConnection()).toEqual({ backend: hold.backends[0], setting: 'on' });
  });

  it('commits a batch of holds and slices asynchronously, and a batch holding a settlement synchronously', async () => {
    const ids = await fundedAccountIn(storage, 1_000_000n);
    const first = await storage.billing.reserve(reserveInput(ids, 1_000n));
    const batchesBefore = hot.writes.stats.batches;
    const holds = await observed(() =>
      Promise.all([
        storage.billing.reserve(reserveInput(ids, 1_000n)),
        storage.billing.grantSlice(slice(heldId(first), ids, 10)),
      ]),
    );
    expect(hot.writes.stats.batches).toBe(batchesBefore + 1);
    expect(holds.settings).toEqual(['off']);

    const mixed = await observed(() =>
      Promise.all([storage.billing.reserve(reserveInput(ids, 1_000n)), settle(heldId(first), ids, 500n)]),
    );
    expect(hot.writes.stats.batches).toBe(batchesBefore + 2);
    expect(mixed.settings).toEqual(['on']);
  });

  it('commits settlements and top-ups synchronously', async () => {
    const ids = await fundedAccountIn(storage, 1_000_000n);
    const held = await storage.billing.reserve(reserveInput(ids, 1_000n));
    expect((await observed(() => settle(heldId(held), ids, 700n))).settings).toEqual(['on']);
    const topUp = () =>
      storage.billing.credit({
        accountId: ids.accountId,
        kind: 'topup',
        amountNano: 5_000n,
        idempotencyKey: uniqueId('topup'),
        note: null,
        at: NOW,
      });
    expect((await observed(topUp)).settings).toEqual(['on']);
  });

  it('commits the locked path holds and slices asynchronously and its settlements synchronously', async () => {
    const ids = await fundedAccountIn(storage, 1_000_000n);
    await storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'month',
      limitNano: 500_000n,
      at: NOW,
    });
    const before = { ...hot.paths.locked };
    let requestId = '';
    const hold = await observed(async () => {
      requestId = heldId(await storage.billing.reserve(reserveInput(ids, 1_000n)));
    });
    const grown = await observed(() => storage.billing.grantSlice(slice(requestId, ids, 10)));
    const settled = await observed(() => settle(requestId, ids, 700n));
    expect(hot.paths.locked).toMatchObject({
      reserve: before.reserve + 1,
      grantSlice: before.grantSlice + 1,
      settle: before.settle + 1,
    });
    expect([hold.settings, grown.settings, settled.settings]).toEqual([['off'], ['off'], ['on']]);
  });

  it('settles a request whose hold vanished within the balance and its spend limit, the rest unbilled', async () => {
    const ids = await fundedAccountIn(storage, 10_000n);
    await storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'month',
      limitNano: 6_000n,
      at: NOW,
    });
    const lost = await storage.billing.reserve(reserveInput(ids, 5_000n));
    const lostId = heldId(lost);
    // What a server crash within the WAL writer's delay leaves: the hold's transaction never happened, its account
    // counters and its part of each limit included.
    await admin.query('begin');
    const limitHolds = await admin.query<{ limit_id: string; hold_nano: string }>(
      'delete from spend_limit_holds where request_id = $1 returning limit_id, hold_nano::text',
      [lostId],
    );
    for (const { limit_id: limitId, hold_nano: holdNano } of limitHolds.rows) {
      await admin.query('update spend_limits set reserved_nano = reserved_nano - $2::bigint where id = $1', [
        limitId,
        holdNano,
      ]);
    }
    await admin.query('delete from reservations where request_id = $1', [lostId]);
    await admin.query('update organisations set reserved_nano = reserved_nano - 5000 where id = $1', [ids.accountId]);
    await admin.query('commit');
    // Admitted meanwhile against the money the lost hold no longer held, and settled.
    const other = await storage.billing.reserve(reserveInput(ids, 4_000n));
    expect(other.admitted).toBe(true);
    expect(await settle(heldId(other), ids, 4_000n)).toMatchObject({ chargedNano: 4_000n });

    // The lost request's settlement (as the journal replays it) finds no hold: 2,000 left under the limit.
    const replayed = await settle(lostId, ids, 5_000n);
    expect(replayed).toMatchObject({ settled: true, chargedNano: 2_000n, unbilledNano: 3_000n, unbilledTokens: 3_000 });
    const account = await admin.query<{ balance: string; reserved: string }>(
      'select balance_nano::text as balance, reserved_nano::text as reserved from organisations where id = $1',
      [ids.accountId],
    );
    expect(account.rows[0]).toEqual({ balance: '4000', reserved: '0' });
    const [limit] = await storage.spendLimits.list(ids.accountId, NOW);
    expect(limit).toMatchObject({ usedNano: 6_000n, reservedNano: 0n });
    // Replayed again, it is settled once.
    expect(await settle(lostId, ids, 5_000n)).toEqual({ settled: false, reason: 'already_settled' });
  });
});
