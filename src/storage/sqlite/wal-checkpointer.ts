import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker copies committed WAL frames into the database file. */
export const CHECKPOINT_INTERVAL_MS = 250;
/**
 * The serving connection's own automatic checkpoint stays as a backstop should the worker ever fall behind, at
 * ten times SQLite's default (1,000 pages): the WAL then never grows without bound.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;
/** After a checkpoint the WAL file is truncated to at most this many bytes (SQLite otherwise keeps its peak size). */
export const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/*
 * The worker's code, as a CommonJS script (an `eval` worker), so it runs the same from the compiled build and
 * from TypeScript sources under the test runner, where a worker file path would not exist. It opens its own
 * connection and runs PASSIVE checkpoints, which never wait for or block readers and writers.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driverPath);
const db = new Database(workerData.filename);
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
const checkpoint = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (error) { parentPort.postMessage({ error: String(error) }); }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/**
 * The thread only runs a PRAGMA on a timer (its heap holds ~3.5 MB after a full GC). Small heap limits make V8
 * size its heap for that: the thread's resident memory 13.0 → 12.3 MB (measured alone, 4 runs each; the old
 * generation limit is what counts). 16 MB stays far above what the loop ever holds: past it the thread would stop
 * with an error, reported through onError, and the serving connection's backstop checkpoint would take over.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 1 } as const;

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread. SQLite's automatic checkpoint runs on the connection
 * that commits, i.e. the event loop, and fsyncs the WAL and the database file: profiled on the bench at ~13 ms
 * every ~70 requests, which set the gateway's p99 latency. Here the serving connection only appends to the WAL
 * (synchronous=NORMAL: no fsync per commit) and the fsyncs happen off the event loop.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped: Promise<void> | undefined;

  constructor(filename: string, onError: (error: Error) => void) {
    const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { filename, driverPath, intervalMs: CHECKPOINT_INTERVAL_MS }, resourceLimits: WORKER_LIMITS });
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error !== undefined) onError(new Error(`WAL checkpoint failed: ${message.error}`));
    });
    this.worker.on('error', onError);
    // A gateway (or a CLI command) exits when its own work is done, whatever this thread is doing.
    this.worker.unref();
  }

  /** Runs a last checkpoint and closes the worker's connection. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      const exited = once(this.worker, 'exit');
      // Referenced again while it finishes: an unreferenced thread lets the process exit in the middle of this
      // await when nothing else is pending, skipping whatever the caller does after closing.
      this.worker.ref();
      this.worker.postMessage('stop');
      await exited;
    })();
    return this.stopped;
  }
}
