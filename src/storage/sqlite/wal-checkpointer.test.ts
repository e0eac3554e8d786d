/**
 * The WAL checkpoint thread (wal-checkpointer.ts): committed pages reach the database file without the serving
 * connection checkpointing (its own automatic checkpoint is pushed far out), closing checkpoints the rest, the
 * thread runs only while there are writes to follow, and a WAL under a load that never pauses is started over.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { openSqliteStorage } from './open-sqlite-storage.js';
import { CHECKPOINT_INTERVAL_MS, WalCheckpointer } from './wal-checkpointer.js';
import { costing } from '../../../test/helpers/settlement-pricers.js';

let directory: string | undefined;

afterEach(async () => {
  if (directory !== undefined) await rm(directory, { recursive: true, force: true });
});

it('copies committed pages into the database file from its own thread, and checkpoints the rest on close', async () => {
  directory = await mkdtemp(join(tmpdir(), 'tollgate-wal-'));
  const file = join(directory, 'gateway.db');
  const errors: Error[] = [];
  const storage = await openSqliteStorage(file, (error) => errors.push(error));
  await storage.migrate();
  await sleep(CHECKPOINT_INTERVAL_MS * 3);
  const before = statSync(file).size;
  const account = await storage.accounts.create({
    id: randomUUID(),
    email: `${randomUUID()}@example.com`,
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: 1,
  });
  const key = await storage.apiKeys.create({
    id: randomUUID(),
    accountId: account.id,
    name: 'k',
    keyHash: randomUUID(),
    hint: 'h',
    createdAt: 1,
    expiresAt: null,
  });
  // Far below the serving connection's automatic checkpoint (10,000 pages), so only the thread can move them.
  for (let batch = 0; batch < 20; batch += 1) {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        storage.billing.settle({
          freeAllowanceTokens: 0,
          usage: {
            requestId: randomUUID(),
            accountId: account.id,
            apiKeyId: key.id,
            model: 'beta-5.4',
            family: 'beta',
            inputTokens: 1,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            cacheWrite1hTokens: 0,
            outputTokens: 1,
            reasoningTokens: 0,
            status: 'ok',
            stream: false,
            latencyMs: 1,
            createdAt: 1,
            rawUsage: 'x'.repeat(200),
            costNano: 0n,
            freeTokens: 0,
            unbilledNano: 0n,
          },
          price: costing(0n),
        }),
      ),
    );
  }
  await sleep(CHECKPOINT_INTERVAL_MS * 4);
  const checkpointed = statSync(file).size;
  expect(checkpointed).toBeGreaterThan(before + 100_000);
  await storage.close();
  expect(errors).toEqual([]);
  // Reopened, every row is there.
  const reopened = await openSqliteStorage(file);
  expect(await reopened.usage.listByAccount(account.id, 2_000)).toHaveLength(1_000);
  await reopened.close();
});

/** The process's OS threads (a worker thread is one): Linux's own count. */
function threadCount(): number {
  return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
}

it('runs its thread only while there are writes: it stops after a period without any, and the next write starts another', async () => {
  directory = await mkdtemp(join(tmpdir(), 'tollgate-wal-'));
  const file = join(directory, 'idle.db');
  const database = new BetterSqlite3(file);
  database.pragma('journal_mode = WAL');
  // Only the thread may move pages into the file.
  database.pragma('wal_autocheckpoint = 0');
  database.exec('create table rows (id integer primary key, body text not null)');
  const insert = database.prepare('insert into rows (body) values (?)');
  const errors: Error[] = [];
  const idleStopMs = 300;
  const checkpointer = new WalCheckpointer(file, (error) => errors.push(error), idleStopMs);
  const write = (rows: number) => {
    for (let row = 0; row < rows; row += 1) insert.run('x'.repeat(1_000));
    checkpointer.noteWrite();
  };
  const threadsIdle = threadCount();
  const fileSizeAtStart = statSync(file).size;
  expect(checkpointer.running).toBe(false);

  write(200);
  expect(checkpointer.running).toBe(true);
  await expect.poll(() => threadCount(), { message: 'the thread to start', timeout: 10_000 }).toBe(threadsIdle + 1);
  await expect
    .poll(() => statSync(file).size, { message: 'the first checkpoint', timeout: 10_000 })
    .toBeGreaterThan(fileSizeAtStart + 200_000);
  // Writes keep it running past the idle period.
  for (let period = 0; period < 3; period += 1) {
    await sleep(idleStopMs / 2);
    write(1);
    expect(checkpointer.running).toBe(true);
  }
  await expect
    .poll(() => ({ running: checkpointer.running, threads: threadCount() }), {
      message: 'the idle thread to stop',
      timeout: idleStopMs * 10,
    })
    .toEqual({ running: false, threads: threadsIdle });

  const checkpointedSize = statSync(file).size;
  write(200);
  expect(checkpointer.running).toBe(true);
  await expect
    .poll(() => statSync(file).size, { message: 'a checkpoint by the next thread', timeout: 10_000 })
    .toBeGreaterThan(checkpointedSize + 200_000);
  await checkpointer.stop();
  expect(checkpointer.running).toBe(false);
  // The worker's exit event can come before its OS thread is gone: on a busy machine the count lagged by one.
  await expect.poll(() => threadCount(), { message: 'the thread to end', timeout: 10_000 }).toBe(threadsIdle);
  // Stopped for good: a write no longer starts a thread.
  write(1);
  expect(checkpointer.running).toBe(false);
  expect(errors).toEqual([]);
  database.close();
});

/** The WAL's index header in the -shm file: its length in frames (`mxFrame`), read as another process would. */
function walFrames(file: string): number {
  try {
    return readFileSync(`${file}-shm`).readUInt32LE(16);
  } catch {
    return 0;
  }
}

it('starts the WAL over under a load that never pauses, so it stays short, without the serving connection checkpointing', async () => {
  directory = await mkdtemp(join(tmpdir(), 'tollgate-wal-'));
  const file = join(directory, 'sustained.db');
  const errors: Error[] = [];
  const restartFrames = 200;
  const storage = await openSqliteStorage(file, (error) => errors.push(error), restartFrames);
  await storage.migrate();
  const account = await storage.accounts.create({
    id: randomUUID(),
    email: `${randomUUID()}@example.com`,
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: 1,
  });
  const key = await storage.apiKeys.create({
    id: randomUUID(),
    accountId: account.id,
    name: 'k',
    keyHash: randomUUID(),
    hint: 'h',
    createdAt: 1,
    expiresAt: null,
  });
  // Settlements through the serving path (a group commit per turn) from 8 callers that never stop, so a commit lands
  // during every checkpoint: SQLite alone would never find the WAL all copied back when a writer begins.
  let sequence = 0;
  let settled = 0;
  let stop = false;
  const caller = async () => {
    while (!stop) {
      sequence += 1;
      await storage.billing.settle({
        freeAllowanceTokens: 0,
        usage: {
          requestId: `req-${String(sequence).padStart(12, '0')}`,
          accountId: account.id,
          apiKeyId: key.id,
          model: 'beta-5.4',
          family: 'beta',
          inputTokens: 1,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          outputTokens: 1,
          reasoningTokens: 0,
          status: 'ok',
          stream: false,
          latencyMs: 1,
          createdAt: 1,
          rawUsage: 'x'.repeat(200),
          costNano: 0n,
          freeTokens: 0,
          unbilledNano: 0n,
        },
        price: costing(0n),
      });
      settled += 1;
      // A steady load, not a flood: SQLite's own backstop (10,000 frames) is not what restarts the WAL here.
      await sleep(2);
    }
  };
  const callers = Array.from({ length: 8 }, caller);
  let longest = 0;
  let restarts = 0;
  let previous = 0;
  let written = 0;
  const started = Date.now();
  // 12 checkpoint periods, and until ~20 restart lengths' worth of frames were written (or 15 s on a very slow machine).
  while (
    (Date.now() - started < CHECKPOINT_INTERVAL_MS * 12 || written < restartFrames * 20) &&
    Date.now() - started < 15_000
  ) {
    await sleep(5);
    const frames = walFrames(file);
    if (frames < previous) restarts += 1;
    else written += frames - previous;
    longest = Math.max(longest, frames);
    previous = frames;
  }
  stop = true;
  await Promise.all(callers);
  await storage.close();
  expect(errors).toEqual([]);
  expect(written).toBeGreaterThan(restartFrames * 10);
  // Restarted again and again: never longer than the restart length plus what one checkpoint period brings.
  expect(restarts).toBeGreaterThanOrEqual(3);
  expect(longest).toBeLessThan(written / 2);
  // Writes held while the thread had the gate were committed once it opened: every answered settlement is there.
  const reopened = new BetterSqlite3(file, { readonly: true });
  expect(reopened.prepare('select count(*) from usage_records').pluck().get()).toBe(settled);
  reopened.close();
});
