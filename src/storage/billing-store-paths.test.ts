/**
 * Every path a billing store can take in production, each forced on purpose and checked for its money outcome:
 * - SQLite: holds live in memory; an admission while Kysely holds the handle in a transaction of its own waits for
 *   it to close, as a group commit flushed then does before it commits on its own (sqlite-group-commit.ts); closing
 *   waits for such a batch too; a settlement that rolls back keeps its hold.
 * - PostgreSQL: reserve, grantSlice and settle as one statement sent alone, as one statement pipelined with others,
 *   and through the locked transaction where the statement cannot decide (postgres-billing-store.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  billingContractFixture,
  DAY,
  fundedAccountIn,
  holdUpTo,
  NOW,
  plainUsage,
  reserveInput as reserveInputFor,
  type AccountIds,
} from '../../test/helpers/billing-contract-fixture.js';
import { costing } from '../../test/helpers/settlement-pricers.js';
import { postgresBackend } from '../../test/helpers/storage-backends.js';
import { planAdmission } from '../billing/admission.js';
import { planSliceGrant } from '../billing/slice-grant.js';
import { splitUsage } from '../billing/usage-split.js';
import { emptyUsage } from '../canonical/usage.js';
import type { ReserveInput, SliceInput } from './billing-types.js';
import type { Database } from './database-schema.js';
import { billingStoreOf } from './kysely-storage.js';
import { openStorage } from './open-storage.js';
import { PostgresBillingStore } from './postgres/postgres-billing-store.js';
import { SqliteBillingStore } from './sqlite/sqlite-billing-store.js';
import { GroupCommit } from './sqlite/sqlite-group-commit.js';
import { MemoryHoldBook } from './sqlite/memory-hold-book.js';
import type { Storage } from './types.js';

const turns = async (count: number) => {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
};

const upTo = (want: bigint) => holdUpTo(want, 10);

describe('SQLite billing store: holds in memory, writes beside another transaction on the handle', () => {
  let directory: string;
  let handle: BetterSqlite3.Database;
  let db: Kysely<Database>;
  let commits: GroupCommit;
  let book: MemoryHoldBook;
  let store: SqliteBillingStore;
  let ids: AccountIds;

  beforeAll(async () => {
    // The schema and an account through the storage as the gateway opens it; then the file opened again and wired as
    // open-sqlite-storage.ts wires it, so that the test can hold a Kysely transaction open as long as it likes.
    directory = await mkdtemp(join(tmpdir(), 'tollgate-store-paths-'));
    const file = join(directory, 'tollgate.db');
    const storage = await openStorage(`sqlite:${file}`);
    await storage.migrate();
    ids = await fundedAccountIn(storage, 100_000n);
    await storage.close();
    handle = new BetterSqlite3(file);
    handle.pragma('journal_mode = WAL');
    db = new Kysely<Database>({ dialect: new SqliteDialect({ database: handle }) });
    const whenHandleFree = (work: () => void) => db.connection().execute(async () => work());
    commits = new GroupCommit(handle, whenHandleFree);
    book = new MemoryHoldBook();
    store = new SqliteBillingStore(handle, commits, book, whenHandleFree);
  });

  afterAll(async () => {
    await store?.close();
    await db?.destroy();
    await rm(directory, { recursive: true, force: true });
  });

  const reserveInput = (want: bigint): ReserveInput => reserveInputFor(ids, upTo(want));

  /** The account's money as stored, and what its holds in memory take. */
  const money = () => ({
    ...(handle
      .prepare(
        'select cast(balance_nano as text) as balance, cast(reserved_nano as text) as reserved from organisations where id = ?',
      )
      .get(ids.accountId) as { balance: string; reserved: string }),
    held: book.account(ids.accountId)?.nano ?? 0n,
  });

  /** A Kysely transaction that adds `credit` to the balance and stays open until `end` is called with how it ends. */
  function openTransaction(credit = 1n) {
    let end!: (how: 'commit' | 'rollback') => void;
    const ending = new Promise<'commit' | 'rollback'>((resolve) => {
      end = resolve;
    });
    const done = db.connection().execute(async (connection) => {
      await sql`begin immediate`.execute(connection);
      await sql`update organisations set balance_nano = balance_nano + ${credit} where id = ${ids.accountId}`.execute(
        connection,
      );
      const how = await ending;
      await sql.raw(how).execute(connection);
    });
    return { end, done };
  }

  it('an admission writes nothing and holds in memory; one waits for an open transaction, never reading its rows', async () => {
    const before = money();
    const held = await store.reserve(reserveInput(3_000n));
    expect(held).toMatchObject({ admitted: true, reservation: { holdNano: 3_000n } });
    expect(money()).toEqual({ ...before, held: before.held + 3_000n });
    // A credit large enough for the next admission, open and then rolled back: read inside it, the admission would
    // have held money that never came.
    const available = BigInt(before.balance) - BigInt(before.reserved) - before.held - 3_000n;
    const other = openTransaction(1_000_000n);
    await turns(2);
    expect(handle.inTransaction).toBe(true);
    let answered = false;
    const reserving = store.reserve(reserveInput(available + 1n)).finally(() => {
      answered = true;
    });
    await turns(5);
    expect(answered).toBe(false);
    other.end('rollback');
    await other.done;
    expect(await reserving).toMatchObject({ admitted: false });
    const settled = await store.settle({
      usage: plainUsage(held.admitted ? held.reservation.requestId : '', ids),
      price: costing(1_000n),
      freeAllowanceTokens: 0,
    });
    expect(settled).toMatchObject({ settled: true, chargedNano: 1_000n });
    expect(money()).toEqual({ ...before, balance: String(BigInt(before.balance) - 1_000n) });
  });

  it('a settlement that rolls back leaves its hold in memory; the next one releases it', async () => {
    const before = money();
    const reserved = await store.reserve(reserveInput(2_500n));
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    const failing = store.settle({
      usage: plainUsage(requestId, ids),
      price: () => {
        throw new Error('the pricer failed');
      },
      freeAllowanceTokens: 0,
    });
    await expect(failing).rejects.toThrow('the pricer failed');
    expect(book.get(requestId)).toMatchObject({ holdNano: 2_500n });
    expect(money()).toEqual({ ...before, held: before.held + 2_500n });
    expect(
      await store.settle({ usage: plainUsage(requestId, ids), price: costing(900n), freeAllowanceTokens: 0 }),
    ).toMatchObject({ settled: true, chargedNano: 900n });
    expect(book.get(requestId)).toBeUndefined();
    expect(money()).toEqual({ ...before, balance: String(BigInt(before.balance) - 900n) });
  });

  it('a settlement waiting behind a transaction that commits is charged once, after it', async () => {
    const reserved = await store.reserve(reserveInput(2_000n));
    const requestId = reserved.admitted ? reserved.reservation.requestId : '';
    const before = money();
    const other = openTransaction();
    await turns(2);
    const deferred = commits.stats.deferred;
    const settling = [1, 2].map(() =>
      store.settle({ usage: plainUsage(requestId, ids), price: costing(700n), freeAllowanceTokens: 0 }),
    );
    await turns(5);
    expect(commits.stats.deferred).toBe(deferred + 1);
    other.end('commit');
    await other.done;
    const results = await Promise.all(settling);
    expect(results).toContainEqual({ settled: false, reason: 'already_settled' });
    expect(results).toContainEqual(expect.objectContaining({ settled: true, chargedNano: 700n }));
    expect(money()).toEqual({
      balance: String(BigInt(before.balance) + 1n - 700n),
      reserved: before.reserved,
      held: before.held - 2_000n,
    });
  });

  it('closing waits for a batch that is waiting for the handle, and commits it', async () => {
    const reserved = await store.reserve(reserveInput(1_000n));
    const other = openTransaction();
    await turns(2);
    const settling = store.settle({
      usage: plainUsage(reserved.admitted ? reserved.reservation.requestId : '', ids),
      price: costing(100n),
      freeAllowanceTokens: 0,
    });
    await turns(3);
    let closed = false;
    const closing = store.close().then(() => {
      closed = true;
    });
    await turns(5);
    expect(closed).toBe(false);
    other.end('commit');
    await other.done;
    await closing;
    expect(await settling).toMatchObject({ settled: true, chargedNano: 100n });
  });
});

describe('PostgreSQL billing store: one statement alone, pipelined, or the locked transaction', () => {
  const fixture = billingContractFixture(postgresBackend);
  const { fundedAccount } = fixture;
  let storage: Storage;
  let store: PostgresBillingStore;

  beforeAll(() => {
    storage = fixture.storage;
    const found = billingStoreOf(storage);
    if (!(found instanceof PostgresBillingStore)) throw new Error('not the PostgreSQL billing store');
    store = found;
  });

  const counts = () => ({
    statement: { ...store.paths.statement },
    locked: { ...store.paths.locked },
    batches: store.writes.stats.batches,
    alone: store.writes.stats.alone,
  });

  function reserveInput(ids: AccountIds, want: bigint, hint: bigint | undefined, more: Partial<ReserveInput> = {}) {
    return {
      requestId: `req-${randomUUID()}`,
      accountId: ids.accountId,
      apiKeyId: ids.keyId,
      day: DAY,
      freeAllowanceTokens: 0,
      createdAt: NOW,
      expiresAt: NOW + 60_000,
      plan: upTo(want),
      ...(hint === undefined
        ? {}
        : { accountHint: { balance: hint, reserved: 0n, freeDay: DAY, freeUsed: 0, freeReserved: 0 } }),
      ...more,
    } satisfies ReserveInput;
  }

  const slice = (requestId: string, ids: AccountIds, tokens: number): SliceInput => ({
    requestId,
    accountId: ids.accountId,
    day: DAY,
    freeAllowanceTokens: 0,
    tokens,
    outputPriceNano: 10n,
    plan: (state) => planSliceGrant(tokens, 10n, state),
    expiresAt: NOW + 60_000,
  });

  const requestIdOf = (result: { admitted: boolean; reservation?: { requestId: string } }) =>
    result.reservation?.requestId ?? '';

  it('alone: one reserve, one slice, one settlement, each one statement by itself', async () => {
    const ids = await fundedAccount(10_000n);
    const before = counts();
    const reserved = await storage.billing.reserve(reserveInput(ids, 2_000n, 10_000n));
    const granted = await storage.billing.grantSlice(slice(requestIdOf(reserved), ids, 100));
    const settled = await storage.billing.settle({
      usage: plainUsage(requestIdOf(reserved), ids),
      price: costing(2_500n),
      freeAllowanceTokens: 0,
      heldFreeTokens: 0,
    });
    const after = counts();
    expect([granted, settled]).toMatchObject([
      { granted: true, holdNano: 1_000n },
      { settled: true, chargedNano: 2_500n },
    ]);
    expect(after.statement).toEqual({
      reserve: before.statement.reserve + 1,
      grantSlice: before.statement.grantSlice + 1,
      settle: before.statement.settle + 1,
    });
    expect(after.locked).toEqual(before.locked);
    expect([after.alone - before.alone, after.batches - before.batches]).toEqual([3, 0]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 7_500n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('pipelined: writes of one turn go as one pipeline, each still checked against the ones before it', async () => {
    const ids = await fundedAccount(10_000n);
    const before = counts();
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => storage.billing.reserve(reserveInput(ids, 3_000n, 10_000n))),
    );
    const after = counts();
    expect(after.batches - before.batches).toBe(1);
    expect(after.statement.reserve - before.statement.reserve).toBe(3);
    // The fourth no longer fits what the three before it in the pipeline left: the locked path refuses it.
    expect(after.locked.reserve - before.locked.reserve).toBe(1);
    expect(results.filter((result) => result.admitted)).toHaveLength(3);
    const settled = await Promise.all(
      results
        .filter((result) => result.admitted)
        .map((result) =>
          storage.billing.settle({
            usage: plainUsage(requestIdOf(result), ids),
            price: costing(1_000n),
            freeAllowanceTokens: 0,
            heldFreeTokens: 0,
          }),
        ),
    );
    expect(settled.every((result) => result.settled && result.chargedNano === 1_000n)).toBe(true);
    expect(counts().batches - after.batches).toBe(1);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 7_000n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('a hold planned on a stale read of the allowance takes the free tokens left and holds money for the rest', async () => {
    const ids = await fundedAccount(1_000_000n);
    const request = {
      inputTokens: 300,
      clientMaxOutputTokens: undefined,
      modelMaxOutputTokens: 4_096,
      firstSliceTokens: 500,
      prices: { input: 3n, output: 10n, cacheRead: 1n, cacheWrite: 2n, cacheWrite1h: 2n },
    };
    const usage = { ...emptyUsage(), inputTokens: 300, outputTokens: 100 };
    const allowance = { freeAllowanceTokens: 1_000 };
    // Every hold planned from the same read, made before any of them: each plans the whole allowance's 800 tokens.
    const stale = { balance: 1_000_000n, reserved: 0n, freeDay: DAY, freeUsed: 0, freeReserved: 0 };
    const before = counts();
    const results = await Promise.all(
      [1, 2, 3, 4].map(() =>
        storage.billing.reserve(
          reserveInput(ids, 0n, undefined, {
            ...allowance,
            accountHint: stale,
            plan: (state) => planAdmission(request, state),
          }),
        ),
      ),
    );
    const after = counts();
    expect(after.statement.reserve - before.statement.reserve).toBe(4);
    expect(after.locked).toEqual(before.locked);
    // What the planner gives with the free tokens each found left: 800, the 200 after it, then none.
    const expected = [800, 200, 0, 0].map((left) => {
      const plan = planAdmission(request, { availableNano: 1_000_000n, freeTokensLeft: left });
      return plan.admitted ? { freeTokens: plan.freeTokens, holdNano: plan.holdNano } : undefined;
    });
    const held = results.map((result) =>
      result.admitted
        ? { freeTokens: result.reservation.freeTokens, holdNano: result.reservation.holdNano }
        : undefined,
    );
    expect(held.sort((a, b) => (b?.freeTokens ?? -1) - (a?.freeTokens ?? -1))).toEqual(expected);
    expect(expected.map((plan) => plan?.holdNano)).toEqual([0n, 5_300n, 5_900n, 5_900n]);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      reservedNano: 17_100n,
      freeReservedTokens: 1_000,
    });
    // Each settles once, within what its hold and the day's allowance leave: 1,000 of the 1,600 reported tokens free.
    let charged = 0n;
    let free = 0;
    for (const result of results) {
      const reservation = result.admitted ? result.reservation : undefined;
      const settled = await storage.billing.settle({
        usage: { ...plainUsage(reservation?.requestId ?? '', ids), ...usage },
        price: (room) => splitUsage(usage, request.prices, room),
        heldFreeTokens: reservation?.freeTokens,
        ...allowance,
      });
      expect(settled).toMatchObject({ settled: true, unbilledNano: 0n, unbilledTokens: 0 });
      if (settled.settled) [charged, free] = [charged + settled.chargedNano, free + settled.freeTokensUsed];
    }
    expect(free).toBe(1_000);
    // Those whose replies took free tokens released by the ones before them were decided in one statement too.
    expect(counts().statement.settle - after.statement.settle).toBe(4);
    expect(counts().locked).toEqual(before.locked);
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({
      reservedNano: 0n,
      freeUsedTokens: 1_000,
      freeReservedTokens: 0,
      balanceNano: 1_000_000n - charged,
    });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });

  it('locked: what one statement cannot decide, the locked transaction decides by the same rules', async () => {
    const ids = await fundedAccount(3_000n);
    // An organisation with a spend limit: the statements write nothing, the locked path holds against the limit.
    await storage.spendLimits.set({
      organisationId: ids.accountId,
      scope: 'organisation',
      scopeId: ids.accountId,
      period: 'month',
      limitNano: 1_000_000n,
      at: NOW,
    });
    const before = counts();
    const reserved = await storage.billing.reserve(reserveInput(ids, 2_000n, undefined));
    expect(reserved).toMatchObject({ admitted: true, reservation: { holdNano: 2_000n } });
    // Only 1,000 is left: the slice's statement wants the whole slice, the locked path grants what is left.
    expect(await storage.billing.grantSlice(slice(requestIdOf(reserved), ids, 150))).toMatchObject({
      granted: true,
      tokens: 100,
      holdNano: 1_000n,
    });
    // A charge past the balance: the statement writes nothing, the locked path charges what there is.
    expect(
      await storage.billing.settle({
        usage: plainUsage(requestIdOf(reserved), ids),
        price: costing(4_000n),
        freeAllowanceTokens: 0,
        heldFreeTokens: 0,
      }),
    ).toMatchObject({ settled: true, chargedNano: 3_000n, unbilledNano: 1_000n });
    const after = counts();
    expect(after.locked).toEqual({
      reserve: before.locked.reserve + 1,
      grantSlice: before.locked.grantSlice + 1,
      settle: before.locked.settle + 1,
    });
    expect(await storage.billing.balance(ids.accountId)).toMatchObject({ balanceNano: 0n, reservedNano: 0n });
    expect(await storage.billing.verifyLedger()).toEqual([]);
  });
});
