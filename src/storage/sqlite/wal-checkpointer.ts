import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { HELD, WRITING, WriteGate } from './write-gate.js';

/** How often the worker copies committed WAL frames into the database file. */
export const CHECKPOINT_INTERVAL_MS = 250;
/**
 * The serving connection's own automatic checkpoint stays as a backstop should the worker ever fall behind, at
 * ten times SQLite's default (1,000 pages): the WAL then never grows without bound.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;
/**
 * A WAL at least this long when a checkpoint starts is started over: the thread holds the write gate (write-gate.ts)
 * for one more PASSIVE checkpoint of the frames that came in during the last one, and the serving connection's next
 * commit, beginning with every frame copied back, writes from the WAL's start. Without it a steady load never
 * restarts the WAL (a commit lands during every checkpoint) and it grows to the backstop above, whose checkpoint
 * runs on the event loop. 4,096 frames are ~16.5 MB of WAL (4 KiB pages): a restart every few seconds at the
 * bench's JSON c16, each holding that turn's commits for one short checkpoint (measured:
 * docs/decisions/0017-wal-write-gate.md).
 */
export const RESTART_AFTER_FRAMES = 4_096;
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
const flags = new Int32Array(workerData.gate);
// Holds the gate (once no write transaction of the serving connection is open: it never waits for us) and copies
// the frames that came in during the last checkpoint; with no commit meanwhile every frame is then copied back and
// the serving connection's next commit starts the WAL over. The gate opens whatever happens.
const catchUpAlone = () => {
  Atomics.store(flags, ${HELD}, 1);
  try {
    while (Atomics.load(flags, ${WRITING}) === 1) Atomics.wait(flags, ${WRITING}, 1, 1);
    db.pragma('wal_checkpoint(PASSIVE)');
  } finally {
    Atomics.store(flags, ${HELD}, 0);
    Atomics.notify(flags, ${HELD});
  }
};
const checkpoint = () => {
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    if (result.busy === 0 && result.log >= workerData.restartFrames) catchUpAlone();
  } catch (error) { parentPort.postMessage({ error: String(error) }); }
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

/** Where the worker loads better-sqlite3 from, resolved at the first start. */
let driverPath: string | undefined;

/**
 * A thread with no write to follow for one such period (checked once per period) is stopped, 10 to 20 s after the
 * last write, and the next write starts another. An idle gateway then holds no thread: measured, an idle gateway's
 * RSS 90 → 79 MB without it. Starting one costs the event loop ~0.7-1 ms (measured), so it is started in the turn
 * after the write, while the request that wrote waits for its vendor, not on that request's path.
 */
export const IDLE_STOP_MS = 10_000;

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread. SQLite's automatic checkpoint runs on the connection
 * that commits, i.e. the event loop, and fsyncs the WAL and the database file: profiled on the bench at ~13 ms
 * every ~70 requests, which set the gateway's p99 latency. Here the serving connection only appends to the WAL
 * (synchronous=NORMAL: no fsync per commit) and the fsyncs happen off the event loop.
 *
 * Its checkpoints are PASSIVE: they never take the write lock, so the serving connection never waits in
 * busy_timeout (synchronously, on the event loop) for them. FULL, RESTART and TRUNCATE checkpoints hold the write
 * lock through their fsyncs; instead a long WAL is started over through the write gate (RESTART_AFTER_FRAMES).
 *
 * The thread runs while there are writes to follow: `noteWrite()` (called for every write of the serving
 * connection) starts it, and it stops, with a last checkpoint, once a period has passed without writes.
 */
export class WalCheckpointer {
  private worker: { thread: Worker; exited: Promise<void> } | undefined;
  /** The thread being stopped, until it has exited (a new one waits for it: two checkpointers would collide). */
  private exiting: Promise<void> | undefined;
  private wroteSinceCheck = false;
  private idleCheck: NodeJS.Timeout | undefined;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly filename: string,
    private readonly onError: (error: Error) => void,
    private readonly idleStopMs = IDLE_STOP_MS,
    /** The serving connection's write transactions go through it (sqlite-group-commit.ts). */
    readonly gate = new WriteGate(),
    private readonly restartFrames = RESTART_AFTER_FRAMES,
  ) {}

  /** Whether a checkpoint thread runs (or is being started). */
  get running(): boolean {
    return this.idleCheck !== undefined;
  }

  /** A write happened on the serving connection: the thread follows it. A flag when it runs already. */
  noteWrite(): void {
    this.wroteSinceCheck = true;
    if (this.idleCheck !== undefined || this.closed !== undefined) return;
    this.idleCheck = setInterval(() => this.stopWhenIdle(), this.idleStopMs);
    this.idleCheck.unref();
    const start = () => setImmediate(() => this.startThread());
    if (this.exiting === undefined) start();
    else void this.exiting.then(start);
  }

  /** Stops the thread (a last checkpoint first), for good. */
  stop(): Promise<void> {
    this.closed ??= (async () => {
      this.stopFollowing();
      await this.exiting;
    })();
    return this.closed;
  }

  private startThread(): void {
    // Stopped meanwhile (the storage closed, or idle again while the previous thread was exiting): nothing to do.
    if (this.idleCheck === undefined || this.worker !== undefined) return;
    driverPath ??= createRequire(import.meta.url).resolve('better-sqlite3');
    const thread = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        filename: this.filename,
        driverPath,
        intervalMs: CHECKPOINT_INTERVAL_MS,
        gate: this.gate.flags.buffer,
        restartFrames: this.restartFrames,
      },
      resourceLimits: WORKER_LIMITS,
    });
    thread.on('message', (message: { error?: string }) => {
      if (message.error !== undefined) this.onError(new Error(`WAL checkpoint failed: ${message.error}`));
    });
    thread.on('error', this.onError);
    const exited = new Promise<void>((resolve) => {
      thread.once('exit', () => {
        // A thread that died holding the gate must not hold the serving connection's commits for good.
        this.gate.open();
        // A thread that died on its own (reported through onError) is not restarted at once, which would spawn one
        // per write if it kept failing: the next write after an idle period starts a new one, and the serving
        // connection's backstop checkpoint covers the meantime.
        if (this.worker?.thread === thread) this.worker = undefined;
        resolve();
      });
    });
    // A gateway (or a CLI command) exits when its own work is done, whatever this thread is doing.
    thread.unref();
    this.worker = { thread, exited };
  }

  private stopWhenIdle(): void {
    if (this.wroteSinceCheck) {
      this.wroteSinceCheck = false;
      return;
    }
    this.stopFollowing();
  }

  /**
   * No more idle checks, and the thread asked for a last checkpoint and to close its connection; `exiting`
   * settles once it is gone.
   */
  private stopFollowing(): void {
    clearInterval(this.idleCheck);
    this.idleCheck = undefined;
    const current = this.worker;
    if (current === undefined) return;
    this.worker = undefined;
    // Referenced again while it finishes: an unreferenced thread lets the process exit in the middle of a close
    // that awaits it when nothing else is pending, skipping whatever the caller does after closing.
    current.thread.ref();
    current.thread.postMessage('stop');
    const exiting = current.exited.then(() => {
      if (this.exiting === exiting) this.exiting = undefined;
    });
    this.exiting = exiting;
  }
}
