import type pg from 'pg';
import { isServerRefusal, type KeptConnections } from './kept-connections.js';
import { runStatements, type PipelinedStatement } from './pipelined-statements.js';

/**
 * One instance's account writes (holds and settlements) gathered and sent to PostgreSQL together, so a
 * hot account is not a queue of row locks and a request costs less than one round trip.
 *
 * Every hot-path write is one statement that locks its wallet row first, checks, and writes, exactly once. Run
 * one at a time, each pays a round trip and a commit while holding that lock, and requests of one account wait on
 * each other's commits (~590 requests/s on one account, against ~1,000 spread over 50). Here the writes that arrive
 * while a batch is being prepared or is in flight go as ONE pipeline of bound statements (pipelined-statements.ts),
 * one round trip and one commit:
 *
 *   SELECT id FROM organisations WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE;
 *   the unbatched path's statements with their own parameters, in arrival order; Sync (the commit)
 *
 * - The statements are the very ones of the unbatched path (prepared once per connection, under the names pg's
 *   own prepared statements use), run in arrival order in one transaction: each sees the writes before it (READ
 *   COMMITTED takes a new snapshot per statement), so a hold re-checks the balance left by the holds and charges
 *   before it in the batch, exactly as if they had run one after the other. A write the statement refuses (its
 *   condition no longer holds) comes back as it does alone, and the caller takes the locked path as before.
 * - Lock order: all the batch's wallet rows are locked first, in id order, before any statement runs. Every other
 *   writer locks one wallet row before that account's other rows, and other batches lock in the same order, so a
 *   batch cannot deadlock with anything.
 * - Failure: a statement that fails aborts the whole transaction (the server answers with an error, so nothing was
 *   committed); each write is then run again alone, as the unbatched path would have, and gets its own outcome.
 *   A lost connection (no answer: the commit may or may not have happened) fails every write of the batch with
 *   that error, as it fails a single write today; settlement is idempotent by request id, so its journal replay
 *   settles each request once either way.
 * - Every value is a bound parameter, as in `pool.query`. A value holding a NUL character, which PostgreSQL text
 *   refuses, never joins a batch: it would roll back the writes batched with it.
 * - A transaction of nothing but holds (admission holds, slice grants) commits without waiting for the WAL flush
 *   (`synchronous_commit = off` for that transaction only, decision record 0020): only a crash of the PostgreSQL
 *   server can lose it. One settlement or any other write in the batch and the whole transaction commits
 *   synchronously, which also flushes every hold committed before it.
 */
export interface BatchedWrite {
  /** The wallet row the statement locks first. */
  accountId: string;
  /** Prepared as `tollgate_${name}` on each connection that runs it, batched or alone. */
  name: string;
  text: string;
  values: readonly unknown[];
  /** It writes nothing but a hold (or its growth): its commit may skip the WAL flush when the rest of the batch does too. */
  holdOnly: boolean;
}

/** Writes of one batch at most: a bound on the query's size and on how long the batch holds its locks. */
const MAX_BATCH = 128;

interface Pending {
  write: BatchedWrite;
  resolve(result: pg.QueryResult): void;
  reject(error: unknown): void;
}

export class PostgresWriteBatcher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Batches sent and writes in them, writes sent alone (a batch of one, or after a failed batch), for tests and metrics. */
  readonly stats = { batches: 0, writes: 0, fallbacks: 0, alone: 0 };

  /**
   * @param maxInFlight batches sent at once: a second batch can take its locks while the first one's answer travels
   *   back; more would only queue on the same rows and take pool connections the other queries need.
   */
  constructor(
    private readonly connections: KeptConnections,
    private readonly maxInFlight = 2,
  ) {}

  run(write: BatchedWrite): Promise<pg.QueryResult> {
    if (write.values.some((value) => typeof value === 'string' && value.includes('\0'))) return this.alone(write);
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Sends at the end of the current event-loop turn (so every write issued in it joins), or, with `maxInFlight`
   * batches already out, as soon as one returns: under load the queue fills while batches travel.
   */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    });
  }

  private async send(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      const only = batch[0]!;
      await this.alone(only.write).then(only.resolve, only.reject);
      return;
    }
    let results: pg.QueryResult[];
    try {
      results = await this.transaction(batch.map((pending) => pending.write));
    } catch (error) {
      if (!isServerRefusal(error)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      // Rolled back: nothing of the batch was written. Each write alone, as it would have run unbatched.
      this.stats.fallbacks++;
      await Promise.all(batch.map((pending) => this.alone(pending.write).then(pending.resolve, pending.reject)));
      return;
    }
    this.stats.batches++;
    this.stats.writes += batch.length;
    batch.forEach((pending, index) => {
      pending.resolve(results[index]!);
    });
  }

  /** The batch as one pipeline on one connection: the writes' results in order, or the server's refusal (nothing committed). */
  private async transaction(writes: readonly BatchedWrite[]): Promise<pg.QueryResult[]> {
    const accounts = [...new Set(writes.map((write) => write.accountId))];
    const first = commitMode(writes);
    const statements: PipelinedStatement[] = [
      ...first,
      { name: 'tollgate_lock_batch_accounts', text: LOCK_ACCOUNTS, values: [accounts] },
      ...writes.map(statementOf),
    ];
    // A connection that failed (not the server refusing a statement) is discarded, not kept (kept-connections.ts).
    const results = await runStatements(this.connections, statements);
    return results.slice(first.length + 1);
  }

  /** The write as the unbatched path runs it: one statement, prepared once per connection under the same name. */
  private async alone(write: BatchedWrite): Promise<pg.QueryResult> {
    this.stats.alone++;
    const statements = [...commitMode([write]), statementOf(write)];
    const results = await runStatements(this.connections, statements);
    return results[statements.length - 1]!;
  }
}

function statementOf(write: BatchedWrite): PipelinedStatement {
  return { name: `tollgate_${write.name}`, text: write.text, values: write.values };
}

/** The statement that opens a transaction of holds only (none for any other), in the same pipeline and round trip. */
function commitMode(writes: readonly BatchedWrite[]): readonly PipelinedStatement[] {
  return writes.every((write) => write.holdOnly) ? [ASYNC_COMMIT] : [];
}

/**
 * This transaction's commit does not wait for its WAL to reach the disk (the WAL writer flushes it within
 * `wal_writer_delay`, at most three times that under load); local to the transaction (`set_config`'s third argument),
 * so the connection's next transaction is synchronous again. `set_config` rather than SET LOCAL, which in a
 * pipeline's implicit transaction (not a transaction block) would send a warning notice with every batch.
 */
const ASYNC_COMMIT: PipelinedStatement = {
  name: 'tollgate_async_commit',
  text: "select set_config('synchronous_commit', 'off', true)",
  values: [],
};

/** The batch's wallet rows locked first, in one order every batch follows, so batches cannot deadlock. */
const LOCK_ACCOUNTS = 'select id from organisations where id = any($1::text[]) order by id for no key update';
