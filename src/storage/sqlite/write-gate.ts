/**
 * Two flags in shared memory between the serving connection (the event loop) and the WAL checkpoint thread
 * (wal-checkpointer.ts), so the thread can have a moment without this process's writes: SQLite starts its WAL
 * over only when a writer begins while every frame is copied back, and under a steady load a commit lands during
 * every checkpoint. Neither side ever waits for the other on the event loop: the serving side checks a flag and,
 * when the thread holds the gate, leaves its writes queued and commits them when the gate opens (a promise), so
 * the event loop goes on and no SQLite lock is waited for (the thread takes none: its checkpoints stay PASSIVE).
 *
 * The handshake is Dekker's with sequentially consistent atomics: each side sets its own flag, then reads the
 * other's. The writer sets WRITING and reads HELD; the thread sets HELD and reads WRITING; at least one of them
 * sees the other's flag, so the thread never checkpoints "alone" while a transaction of this process is open.
 */
export const HELD = 0;
export const WRITING = 1;

/** `Atomics.waitAsync` (ES2024, in Node 20's V8) as this file uses it; the project's lib is ES2023. */
type WaitAsync = (
  array: Int32Array,
  index: number,
  value: number,
) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

export class WriteGate {
  /** HELD: the checkpoint thread wants no writes now; WRITING: the serving connection is in a write transaction. */
  readonly flags = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));

  /** Before a write transaction: true if it may begin (then `leave()` after it), false while the thread holds the gate. */
  tryEnter(): boolean {
    Atomics.store(this.flags, WRITING, 1);
    if (Atomics.load(this.flags, HELD) === 0) return true;
    Atomics.store(this.flags, WRITING, 0);
    return false;
  }

  leave(): void {
    Atomics.store(this.flags, WRITING, 0);
  }

  /** Settles once the thread no longer holds the gate (at once if it does not). */
  whenOpen(): Promise<void> {
    const wait = waitAsync(this.flags, HELD, 1);
    return wait.async ? wait.value.then(() => undefined) : Promise.resolve();
  }

  /** Opens the gate from this side: the thread that held it is gone (it died mid-restart, say). */
  open(): void {
    Atomics.store(this.flags, HELD, 0);
    Atomics.notify(this.flags, HELD);
  }
}
