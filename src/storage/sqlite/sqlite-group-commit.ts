import type { Database as BetterSqliteDatabase } from 'better-sqlite3';
import { WriteGate } from './write-gate.js';

/**
 * Group commit for the SQLite billing store (sqlite-billing-store.ts): writes queued in one event-loop turn are
 * committed together after the turn's I/O callbacks (setImmediate). Profiled: each COMMIT (its WAL page writes) cost
 * more CPU than the statements it committed, and concurrent requests touch the same pages (the wallet row, the tails
 * of the usage, ledger and rollup tables), so one commit for a turn's requests writes those pages once. Each caller is
 * answered only after the commit, so a settled request is as durable as before; the wait is one turn.
 *
 * A write that throws (a second settlement, a hold the account cannot cover) must fail alone. The batch first runs
 * without savepoints (a SAVEPOINT and RELEASE per write cost a third of the hot path's CPU on the bench); when a write
 * throws, that transaction rolls back whole and the batch runs again with a savepoint per write. The writes are pure
 * functions of the database's state, so running one again after a rollback is safe.
 *
 * The handle is shared with Kysely, which holds it across awaits inside its own transactions (sign-up, rotation,
 * redemption, a credit...). A batch flushed while one of those is open must not run inside it (it would commit or roll
 * back with someone else's work, and a nested better-sqlite3 transaction would become a savepoint of it): the batch
 * waits until that transaction has closed (`whenHandleFree`, which queues behind Kysely's single connection), then
 * commits on its own as always. `stats.deferred` counts those batches.
 */
export class GroupCommit {
  /** Batches committed, those that needed savepoints, and those that waited for an open transaction to close. */
  readonly stats = { batches: 0, savepointed: 0, deferred: 0 };
  /** Runs a batch in one BEGIN IMMEDIATE … COMMIT, all or nothing: the usual case, where no write throws. */
  private readonly wholeBatchTransaction: (batch: readonly QueuedWrite[], values: unknown[]) => void;
  /** Runs a batch in one BEGIN IMMEDIATE … COMMIT, each write in a savepoint: for a batch in which a write threw. */
  private readonly batchTransaction: (batch: readonly QueuedWrite[], outcomes: Outcome[]) => void;
  /** One write of a batch inside a savepoint: a write that throws is rolled back alone. */
  private readonly inSavepoint: (write: () => unknown) => unknown;
  private queue: QueuedWrite[] = [];
  private flushScheduled = false;
  /** A batch is waiting for the checkpoint thread to open the write gate. */
  private waitingForGate = false;
  /** Batches waiting for another transaction on the handle to close. */
  private waitingForHandle = new Set<Promise<void>>();

  constructor(
    private readonly database: BetterSqliteDatabase,
    /**
     * Runs `work` once no other transaction is open on the handle, holding the handle's other users off while it runs
     * (open-sqlite-storage.ts: Kysely's single connection).
     */
    private readonly whenHandleFree: (work: () => void) => Promise<void>,
    /** Told of each batch it writes (the WAL checkpoint thread follows writes). */
    private readonly onWrite: () => void = () => {},
    /** Shared with the WAL checkpoint thread, which holds it for a moment to start the WAL over (write-gate.ts). */
    private readonly gate: WriteGate = new WriteGate(),
  ) {
    this.wholeBatchTransaction = database.transaction((batch: readonly QueuedWrite[], values: unknown[]) => {
      for (const queued of batch) {
        try {
          values.push(queued.write());
        } catch (error) {
          throw new WriteFailed(error);
        }
      }
    }).immediate;
    this.inSavepoint = database.transaction((write: () => unknown) => write());
    // `.immediate`: BEGIN IMMEDIATE takes the write lock first, as Kysely's write transactions do (transactions.ts), so
    // another process's writer waits for us (busy_timeout) instead of failing our read-then-write halfway.
    this.batchTransaction = database.transaction((batch: readonly QueuedWrite[], outcomes: Outcome[]) => {
      for (const queued of batch) {
        try {
          outcomes.push({ ok: true, value: this.inSavepoint(queued.write) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    }).immediate;
  }

  /** Queues a synchronous write for the turn's commit; settles with its value once committed (or its error). */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Commits what is queued now, unless the checkpoint thread holds the write gate: then the batch stays queued (and
   * grows) until the gate opens, one short checkpoint later, while the event loop goes on. When another transaction
   * is open on the handle, the batch waits for it to close.
   */
  private flush(): void {
    if (this.queue.length === 0) {
      this.flushScheduled = false;
      return;
    }
    if (this.database.inTransaction) {
      const batch = this.takeQueue();
      this.stats.deferred++;
      // Back at the head of the queue once the other transaction has closed, and flushed from there: ahead of writes
      // queued meanwhile, through the same gate and commit as any batch.
      const waiting = this.whenHandleFree(() => {
        this.queue = [...batch, ...this.queue];
        this.flush();
      }).catch((error: unknown) => {
        for (const queued of batch) queued.reject(error);
      });
      this.waitingForHandle.add(waiting);
      void waiting.finally(() => this.waitingForHandle.delete(waiting));
      return;
    }
    if (!this.gate.tryEnter()) {
      // flushScheduled stays set: writes queued meanwhile join this batch instead of scheduling flushes of their own.
      this.flushScheduled = true;
      if (!this.waitingForGate) {
        this.waitingForGate = true;
        void this.gate.whenOpen().then(() => {
          this.waitingForGate = false;
          this.flush();
        });
      }
      return;
    }
    const batch = this.takeQueue();
    try {
      this.commit(batch);
    } finally {
      this.gate.leave();
    }
  }

  /** The queued writes, handed to the one flush that writes them; later writes schedule a flush of their own. */
  private takeQueue(): QueuedWrite[] {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    return batch;
  }

  /** Commits everything queued, waiting for the write gate or an open transaction: before the handle closes. */
  async flushAll(): Promise<void> {
    while (this.queue.length > 0 || this.waitingForHandle.size > 0) {
      if (this.waitingForHandle.size > 0) {
        await Promise.all(this.waitingForHandle);
        continue;
      }
      await this.gate.whenOpen();
      this.flush();
    }
  }

  private commit(batch: QueuedWrite[]): void {
    this.onWrite();
    this.stats.batches++;
    const values: unknown[] = [];
    try {
      this.wholeBatchTransaction(batch, values);
      for (let index = 0; index < batch.length; index++) batch[index]!.resolve(values[index]);
      return;
    } catch (error) {
      if (!(error instanceof WriteFailed)) {
        // The commit itself failed (or BEGIN could not get the lock in time): nothing of the batch was written.
        for (const queued of batch) queued.reject(error);
        return;
      }
    }
    this.stats.savepointed++;
    const outcomes: Outcome[] = [];
    try {
      this.batchTransaction(batch, outcomes);
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    batch.forEach((queued, index) => {
      const outcome = outcomes[index]!;
      if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
  }
}

/** A write of a whole-batch transaction threw: the batch runs again with a savepoint per write. */
class WriteFailed extends Error {
  constructor(cause: unknown) {
    super('A write of the batch failed.', { cause });
  }
}

interface QueuedWrite {
  /** Runs inside the batch's transaction, synchronously. */
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
