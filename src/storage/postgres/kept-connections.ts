import pg from 'pg';

/**
 * The pool connections the hot path's batchers run their statements on, kept checked out between statements
 *: a checkout and a release per statement (pg-pool's acquire and release events, the client's idle
 * listener swapped, an idle timer set and cleared) cost ~13 µs of CPU per PostgreSQL-mode request at c16.
 *
 * - A statement takes a kept connection that is free, or checks one out of the pool; each statement still has its
 *   own connection while it runs (pg queues a second query behind the first, so sharing one would serialise a key
 *   lookup behind a batch's commit). Free ones are taken last-in first-out, so a quiet instance uses one or two.
 * - A connection is given back to the pool, not kept, when its statement failed with anything but the server's
 *   refusal (a lost or broken connection: pg-pool then discards it, as before), when `maxKept` are already free,
 *   when a query of the storage's other users is waiting for a pool connection, or once `close` was called.
 * - A kept connection that ends while free (server restart, cut network) is given back at once with its error, so
 *   the next statement checks out a fresh one, as it would have from the pool: an outage is still seen only by
 *   the statements that ran during it, and classified the same way (storage-unavailable.ts).
 * - A connection left free for between one and two `idleMs` is given back to the pool (whose own idle timeout then
 *   closes it), so a quiet instance does not hold connections open forever. One unref'd interval timer does it,
 *   running only while some are free: no timer per statement.
 * - `close` gives every free one back; the storage closes it before ending the pool, whose `end` waits for every
 *   checked-out connection.
 */
export class KeptConnections {
  private readonly free: Kept[] = [];
  private closed = false;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly maxKept = 4,
    private readonly idleMs = 10_000,
  ) {}

  /** Runs `work` on a connection of its own; a DatabaseError (the server's refusal) leaves the connection usable. */
  async use<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = this.take() ?? (await this.pool.connect());
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      if (!isServerRefusal(error)) broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      this.giveBack(client, broken);
    }
  }

  /** Gives the free connections back to the pool and keeps none from now on. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const kept of this.free.splice(0)) {
      kept.client.off('end', kept.onEnd);
      kept.client.release();
    }
  }

  /** Gives back the free connections no statement used since the last sweep (a used one is a new entry, `fresh`). */
  private sweep(): void {
    for (const kept of this.free.slice()) {
      if (kept.fresh) {
        kept.fresh = false;
        continue;
      }
      this.free.splice(this.free.indexOf(kept), 1);
      kept.client.off('end', kept.onEnd);
      kept.client.release();
    }
    if (this.free.length === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private take(): pg.PoolClient | undefined {
    const kept = this.free.pop();
    if (kept === undefined) return undefined;
    kept.client.off('end', kept.onEnd);
    return kept.client;
  }

  private giveBack(client: pg.PoolClient, broken: Error | undefined): void {
    // Someone waiting on the pool (Kysely's queries and transactions share it) gets the connection instead.
    if (broken !== undefined || this.closed || this.free.length >= this.maxKept || this.pool.waitingCount > 0) {
      client.release(broken);
      return;
    }
    const kept: Kept = {
      client,
      fresh: true,
      onEnd: () => {
        const at = this.free.indexOf(kept);
        if (at !== -1) this.free.splice(at, 1);
        client.release(new Error('A kept PostgreSQL connection ended while free'));
      },
    };
    client.once('end', kept.onEnd);
    this.free.push(kept);
    this.sweeper ??= setInterval(() => this.sweep(), this.idleMs).unref();
  }
}

/** An error the server answered with (it has a SQLSTATE): the connection is fine and the transaction did not commit. */
export function isServerRefusal(error: unknown): error is pg.DatabaseError {
  return error instanceof pg.DatabaseError;
}

interface Kept {
  readonly client: pg.PoolClient;
  /** Given back since the last sweep. */
  fresh: boolean;
  readonly onEnd: () => void;
}
