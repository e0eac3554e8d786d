/**
 * The gateway's own database fails for real, under load of streams and non-streams on both client APIs:
 * - PostgreSQL behind a TCP relay that the test severs and then keeps refusing for a few seconds;
 * - a private PostgreSQL cluster the test stops (`pg_ctl stop -m fast`, then `-m immediate`) and starts again;
 * - SQLite whose database file and WAL refuse writes (the immutable attribute: see test/helpers/immutable-files.ts).
 * During a PostgreSQL outage new requests get 503 (529 for Anthropic clients) with retry-after, never a 500, and
 * the log says so once per interval; settlements of replies already running go to the journal. SQLite holds live in
 * the gateway's memory, so while its file refuses writes requests are still served and every settlement is journaled. Afterwards every request a
 * client saw complete has its usage record, `tollgate ledger verify` (the built CLI) is clean with nothing left in
 * the journal, and nothing is held.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from '../helpers/cli-path.js';
import { makeImmutable, makeWritable } from '../helpers/immutable-files.js';
import { startLoad, type CallOutcome } from '../helpers/outage-load.js';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { startRelayedPostgres } from '../helpers/relayed-postgres.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const run = promisify(execFile);
/** Test-sized holds: a hold whose admission reply was lost in the cut is released within seconds. */
const HOLD_TIMERS = { RESERVATION_TTL_MS: '8000', SWEEP_INTERVAL_MS: '500', TOLLGATE_SHORT_TIMERS: '1' };

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function metric(harness: TestGateway, name: string): Promise<number> {
  const text = await (await fetch(`${harness.gateway.url}/metrics`)).text();
  const line = text.split('\n').find((each) => each.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/**
 * Load before, during and after `outage` (which cuts the database and restores it), then every check of the
 * issue: what the clients saw, the log, the usage records, the ledger and the journal, the holds.
 */
async function survivesOutage(
  harness: TestGateway,
  outage: () => Promise<void>,
  /** PostgreSQL refuses new requests while down; SQLite admits from memory (its holds live there) and journals. */
  refusesNewRequests = true,
): Promise<CallOutcome[]> {
  const { accountId, key } = await harness.createAccountWithKey(undefined, 'enterprise');
  await harness.gateway.storage.billing.credit({
    accountId,
    kind: 'topup',
    amountNano: 100_000_000_000n,
    idempotencyKey: `topup-${accountId}`,
    note: null,
    at: Date.now(),
  });
  const logsBefore = harness.logs.length;
  const load = startLoad(harness.gateway.url, key);
  await sleep(2_500);
  await outage();
  await sleep(2_500);
  const outcomes = await load.stop();

  // What the clients saw: replies, or 503 / 529 with retry-after; never a 500 or anything else.
  const completed = outcomes.filter((outcome) => outcome.completed);
  const refused = outcomes.filter((outcome) => !outcome.completed);
  expect(completed.length).toBeGreaterThan(20);
  if (refusesNewRequests) expect(refused.length).toBeGreaterThan(0);
  else expect(refused).toEqual([]);
  for (const outcome of refused) {
    expect(outcome, JSON.stringify(outcome)).toMatchObject({
      status: outcome.kind.startsWith('anthropic') ? 529 : 503,
      retryAfter: '5',
    });
  }
  for (const kind of ['openai', 'anthropic'])
    expect(completed.some((outcome) => outcome.kind.startsWith(kind) && outcome.kind.endsWith('stream'))).toBe(true);

  // Replies that were running when the database went away were settled through the journal, now empty: each one
  // on disk (a write that failed would count here, make the gateway refuse paid requests and fail this test).
  expect(await metric(harness, 'tollgate_settlements_journaled_total')).toBeGreaterThan(0);
  expect(await metric(harness, 'tollgate_settlement_journal_write_failures_total')).toBe(0);
  expect(await metric(harness, 'tollgate_settlement_journal_unwritten')).toBe(0);
  await expect
    .poll(() => metric(harness, 'tollgate_settlement_journal_pending'), { timeout: 20_000, interval: 250 })
    .toBe(0);
  expect(await metric(harness, 'tollgate_settlements_replayed_total')).toBeGreaterThan(0);

  // Every reply a client saw complete is billed: its usage record exists (the request id is its key: one).
  const ids = completed.map((outcome) => outcome.requestId!);
  const recorded = await harness.gateway.storage.usage.recordedRequestIds(ids);
  expect(ids.filter((id) => !recorded.has(id))).toEqual([]);
  // Nothing held (a hold whose admission answer was lost in the cut expires and is swept).
  await expect
    .poll(async () => (await harness.gateway.storage.billing.balance(accountId))?.reservedNano, {
      timeout: 20_000,
      interval: 250,
    })
    .toBe(0n);

  const verify = await run(process.execPath, [BUILT_CLI, 'ledger', 'verify', '--json'], {
    env: {
      ...process.env,
      DATABASE_URL: harness.databaseUrl,
      SETTLEMENT_JOURNAL_DIR: harness.gateway.config.settlementJournalDir,
    },
  });
  expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, mismatches: [], journal: { pending: [] } });

  // The log: the outage announced once (then a line per 10 s at most), no internal error, no line per request.
  await harness.flushLogs();
  const lines = harness.logs
    .slice(logsBefore)
    .join('')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { level: number; msg: string });
  expect(lines.filter((line) => line.msg === 'internal error')).toEqual([]);
  expect(lines.filter((line) => line.msg.startsWith('storage unavailable'))).toHaveLength(1);
  expect(lines.filter((line) => line.level >= 40).length).toBeLessThan(15);
  return outcomes;
}

describe('database outages under load', () => {
  it('PostgreSQL behind a relay: every connection severed, then refused for 4 s', async () => {
    const postgres = await startRelayedPostgres();
    cleanups.push(() => postgres.close());
    const harness = await startTestGateway({ env: { DATABASE_URL: postgres.url, ...HOLD_TIMERS } });
    cleanups.push(() => harness.close());

    await survivesOutage(harness, () => postgres.relay.refuse(4_000));
  }, 120_000);

  for (const mode of ['fast', 'immediate'] as const) {
    it(`a private PostgreSQL cluster stopped (-m ${mode}) and started again 4 s later`, async () => {
      const cluster: PrivatePostgres = await startPrivatePostgres();
      cleanups.push(() => cluster.destroy());
      const harness = await startTestGateway({ env: { DATABASE_URL: cluster.url, ...HOLD_TIMERS } });
      cleanups.push(() => harness.close());

      await survivesOutage(harness, async () => {
        await cluster.stop(mode);
        await sleep(4_000);
        await cluster.start();
      });
    }, 180_000);
  }

  it('SQLite whose database file and WAL refuse every write for 4 s', async () => {
    const harness = await startTestGateway({ env: HOLD_TIMERS });
    cleanups.push(() => harness.close());
    const file = harness.databaseUrl.slice('sqlite:'.length);
    const frozen = [file, `${file}-wal`];
    cleanups.push(() => makeWritable(frozen));
    // The journal lives beside the database (the data directory) and stays writable: only the database fails.
    expect(harness.gateway.config.settlementJournalDir).toBe(join(file, '..', 'settlement-journal'));

    await survivesOutage(
      harness,
      async () => {
        await makeImmutable(frozen);
        await sleep(4_000);
        await makeWritable(frozen);
      },
      false,
    );
  }, 120_000);
});
