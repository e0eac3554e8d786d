import { mkdir, open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { randomHex } from '../ids/random-hex.js';
import { decodeJournal, encodeJournalLine, type JournalEntry } from './settlement-journal-entry.js';
import type { JournalCounts } from '../observability/prometheus-metrics.js';

export interface SettlementJournalOptions {
  /** SETTLEMENT_JOURNAL_DIR, or `settlement-journal` under the data directory. */
  directory: string;
  /**
   * An instance refreshes the lock of its journal every third of this; a journal whose lock is older is its dead
   * owner's, and another instance on the same directory adopts it (replays it, then deletes it).
   */
  staleMs?: number;
  /** A file that reaches this size is closed and the next entries go to a new one (default 16 MiB). */
  maxFileBytes?: number;
  /** Failures of the journal's own files that do not stop it taking settlements (adoption, deletes), for the log. */
  onError?: (error: unknown, context: string) => void;
  /**
   * The journal cannot be written (told once, when it becomes so): settlements that need it are not durable, so
   * the gateway refuses paid requests until `onRecovered`.
   */
  onUnavailable?: (error: unknown, context: string) => void;
  /** A write succeeded again after `onUnavailable`. */
  onRecovered?: () => void;
  /** Told of each settlement once it is on disk (written and fdatasynced). */
  onAppended?: () => void;
  /** While the journal cannot be written, how often a write is tried again (default 1 s). */
  retryMs?: number;
}

/** Why the journal cannot be written, since when: what admission refusals, `/readyz` and the log say. */
export interface JournalUnavailable {
  since: number;
  error: unknown;
  /** One line: what failed, where, and the system's error (for the log and `/readyz`'s log line). */
  reason: string;
  /** The system's error code (`EACCES`, `ENOSPC`, `EROFS`…), when there is one: what a client is told. */
  code: string | undefined;
}

/** `settlements.<instance>.<sequence>.jsonl`: the instance that writes it, then its files in order. */
const FILE_NAME = /^settlements\.([a-z0-9]+)\.(\d+)\.jsonl$/;

interface TrackedFile {
  /** Entries of the file not applied yet, by request id. */
  pending: Map<string, JournalEntry>;
  /** The instance that wrote it (this one's or an adopted one's). */
  instance: string;
}

interface Waiting {
  line: string;
  entry: JournalEntry;
  /** True once on disk; false when the write failed (the entry is then unwritten). */
  done: (onDisk: boolean) => void;
  /** An unwritten entry tried again: once applied by the store meanwhile, it needs no tracking. */
  retry?: boolean;
}

/**
 * The local settlement journal: settlements the store refused, appended to a file of this instance
 * and flushed to disk (fdatasync) before the reply that needs them completes, then replayed by request id
 * (`BillingService.replayJournal`), which the store makes idempotent. Only refused settlements come here, so a
 * healthy gateway never writes or fsyncs anything; concurrent ones share one write and one fdatasync.
 *
 * Several instances may share a directory: each writes only its own files, under a lock it keeps fresh
 * (proper-lockfile: a lock directory whose mtime the owner refreshes; staleness is how a dead owner shows, on a
 * local or a network file system). An instance adopts the files of an instance whose lock is released (a clean
 * stop) or stale (a crash), replays them and deletes them. If two ever replay the same entry (a lock taken over
 * from an owner that was only frozen), the store's unique request id makes the second a no-op.
 *
 * Files are deleted once every entry in them is applied; the current file is closed and deleted as soon as it
 * has nothing pending, so the journal holds only what the store has not taken.
 *
 * A write that fails (a directory gone or read-only, a full disk, a lock that cannot be taken) is never taken for
 * a durable one: the journal turns unavailable (`unavailable()`, told once through `onUnavailable`), its entries
 * stay in memory as unwritten, offered to replay like pending ones and written again every `retryMs`; a probe
 * write does the same when none is left. The first write that succeeds makes it available again.
 */
export class SettlementJournal {
  readonly directory: string;
  private readonly instance = `${Date.now().toString(36)}${randomHex(4)}`;
  private readonly staleMs: number;
  private readonly maxFileBytes: number;
  private readonly retryMs: number;
  private readonly onError: (error: unknown, context: string) => void;
  private readonly onUnavailable: (error: unknown, context: string) => void;
  private readonly onRecovered: () => void;
  private readonly onAppended: () => void;
  private readonly files = new Map<string, TrackedFile>();
  /** The file of each pending request id. */
  private readonly fileOf = new Map<string, string>();
  /** Entries whose write failed, by request id: in memory only until written or applied. */
  private readonly unwritten = new Map<string, JournalEntry>();
  /** Lock releases by instance (this one's, and each adopted one's). */
  private readonly locks = new Map<string, () => Promise<void>>();
  private current: { path: string; handle: FileHandle; bytes: number } | undefined;
  private sequence = 0;
  private queue: Waiting[] = [];
  /** The one task that writes, rotates and deletes files: never two at once. */
  private pumping: Promise<void> | undefined;
  private failure: JournalUnavailable | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retrying = false;
  private readonly counts = { journaled: 0, writeFailures: 0, replayed: 0, alreadyApplied: 0, unreadableLines: 0 };

  constructor(options: SettlementJournalOptions) {
    this.directory = options.directory;
    this.staleMs = options.staleMs ?? 60_000;
    this.maxFileBytes = options.maxFileBytes ?? 16 * 1024 * 1024;
    this.retryMs = options.retryMs ?? 1_000;
    this.onError = options.onError ?? (() => {});
    this.onUnavailable = options.onUnavailable ?? (() => {});
    this.onRecovered = options.onRecovered ?? (() => {});
    this.onAppended = options.onAppended ?? (() => {});
  }

  /**
   * The start-up check: the directory exists or can be made, a file in it can be written, flushed and deleted, and
   * this instance's lock can be taken (then released: a healthy gateway keeps nothing there). Rejects with what
   * failed; leaves no file behind.
   */
  async verifyUsable(): Promise<void> {
    await this.probeDirectory();
    const release = await this.lock(this.instance).catch((error: unknown) => {
      throw new Error(`cannot take a lock there: ${describe(error)}`, { cause: error });
    });
    if (release === undefined)
      throw new Error(`the lock of this instance (${this.instance}) is held by another process`);
    await release();
  }

  /**
   * Appends a settlement; resolves once it is on disk (true), or false when it could not be written: the journal
   * is then unavailable, and the entry stays in memory, tried again on the journal and offered to replay.
   */
  append(entry: JournalEntry): Promise<boolean> {
    return new Promise((done) => {
      this.queue.push({ line: encodeJournalLine(entry), entry, done });
      // Gather the settlements of this turn into one write and one fdatasync.
      if (this.pumping === undefined)
        this.pumping = new Promise((resolve) => setImmediate(resolve)).then(() => this.pump());
    });
  }

  /** Why the journal cannot be written now, or undefined while it can. */
  unavailable(): JournalUnavailable | undefined {
    return this.failure;
  }

  /** Entries not applied yet, oldest file first, then unwritten ones. A snapshot: safe to apply while iterating. */
  pendingEntries(): JournalEntry[] {
    return [...[...this.files.values()].flatMap((file) => [...file.pending.values()]), ...this.unwritten.values()];
  }

  /** A journaled settlement the store has now (applied by replay, or found applied): forgotten, its file deleted once empty. */
  applied(requestId: string, outcome: 'settled' | 'already_settled'): void {
    const path = this.fileOf.get(requestId);
    const unwritten = this.unwritten.delete(requestId);
    if (path === undefined && !unwritten) return;
    if (outcome === 'settled') this.counts.replayed += 1;
    else this.counts.alreadyApplied += 1;
    if (path === undefined) return;
    this.fileOf.delete(requestId);
    const file = this.files.get(path);
    file?.pending.delete(requestId);
    if (file !== undefined && file.pending.size === 0) this.pumping ??= this.pump();
  }

  stats(): JournalCounts {
    return {
      pending: this.fileOf.size,
      unwritten: this.unwritten.size,
      unavailable: this.failure !== undefined,
      ...this.counts,
    };
  }

  /**
   * Takes over the journals of instances that are gone (their lock released or stale): their entries join the
   * pending ones. Run at start-up and from time to time; a directory that does not exist holds nothing.
   */
  async adopt(): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.onError(error, 'reading the journal directory');
      return 0;
    }
    const byInstance = new Map<string, string[]>();
    // Sorted, so each instance's files come in the order it wrote them (zero-padded sequence numbers).
    for (const name of names.sort()) {
      const instance = FILE_NAME.exec(name)?.[1];
      if (instance === undefined || instance === this.instance || this.locks.has(instance)) continue;
      byInstance.set(instance, [...(byInstance.get(instance) ?? []), join(this.directory, name)]);
    }
    let adopted = 0;
    for (const [instance, paths] of byInstance) {
      let release: (() => Promise<void>) | undefined;
      try {
        release = await this.lock(instance);
      } catch (error) {
        this.onError(error, `locking the settlement journal of ${instance}`);
      }
      if (release === undefined) continue;
      this.locks.set(instance, release);
      for (const path of paths) {
        const { entries, unreadableLines } = decodeJournal(await readFile(path, 'utf8').catch(() => ''));
        this.counts.unreadableLines += unreadableLines;
        this.track(path, instance, entries);
        adopted += entries.length;
      }
      this.pumping ??= this.pump();
    }
    return adopted;
  }

  /**
   * Writes what is queued (unwritten entries too, one last time), then closes the files and releases the locks.
   * Pending entries stay on disk; unwritten ones that still cannot be written are reported: they die with the process.
   */
  async close(): Promise<void> {
    clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    if (this.unwritten.size > 0) await this.writeUnwritten();
    while (this.pumping !== undefined) await this.pumping;
    if (this.unwritten.size > 0) {
      const ids = [...this.unwritten.keys()];
      this.onError(
        new Error(
          `${ids.length} settlement(s) could be written neither to the store nor to the journal and are lost: ${ids.join(', ')}`,
        ),
        'closing the settlement journal',
      );
    }
    await this.current?.handle.close().catch(() => undefined);
    this.current = undefined;
    await Promise.all([...this.locks.values()].map((release) => release().catch(() => undefined)));
    this.locks.clear();
  }

  private track(path: string, instance: string, entries: readonly JournalEntry[]): void {
    let file = this.files.get(path);
    if (file === undefined) {
      file = { pending: new Map(), instance };
      this.files.set(path, file);
    }
    for (const entry of entries) {
      file.pending.set(entry.usage.requestId, entry);
      this.fileOf.set(entry.usage.requestId, path);
    }
  }

  /** Writes queued entries (a batch per write + fdatasync), deletes files with nothing pending, until idle. */
  private async pump(): Promise<void> {
    try {
      for (;;) {
        if (this.queue.length > 0) await this.writeBatch(this.queue.splice(0));
        else if (!(await this.deleteAppliedFiles())) break;
      }
    } finally {
      this.pumping = undefined;
    }
    // Work that arrived while the last step finished.
    if (this.queue.length > 0) this.pumping ??= this.pump();
  }

  private async writeBatch(batch: Waiting[]): Promise<void> {
    let current: { path: string; handle: FileHandle; bytes: number };
    try {
      current = await this.openCurrent();
      const text = batch.map((waiting) => waiting.line).join('');
      await current.handle.write(text);
      await current.handle.datasync();
      current.bytes += Buffer.byteLength(text);
    } catch (error) {
      // A half-written batch would leave a torn line in the middle of the file: new entries go to a new one.
      await this.closeCurrent();
      for (const { entry, retry } of batch) {
        // An unwritten entry the store took while it was being tried again is done with.
        if (retry !== true || this.unwritten.has(entry.usage.requestId))
          this.unwritten.set(entry.usage.requestId, entry);
      }
      this.writeFailed(error, 'writing settlements to the journal');
      for (const waiting of batch) waiting.done(false);
      return;
    }
    const written = batch.filter(({ entry, retry }) => retry !== true || this.unwritten.has(entry.usage.requestId));
    this.track(
      current.path,
      this.instance,
      written.map((waiting) => waiting.entry),
    );
    for (const { entry } of written) {
      this.unwritten.delete(entry.usage.requestId);
      this.counts.journaled += 1;
      this.onAppended();
    }
    for (const waiting of batch) waiting.done(true);
    this.writable();
    if (this.current !== undefined && this.current.bytes >= this.maxFileBytes) await this.closeCurrent();
  }

  private async openCurrent(): Promise<{ path: string; handle: FileHandle; bytes: number }> {
    if (this.current !== undefined) return this.current;
    await mkdir(this.directory, { recursive: true });
    if (!this.locks.has(this.instance)) {
      const release = await this.lock(this.instance);
      if (release === undefined)
        throw new Error(`The journal lock of this instance (${this.instance}) is held elsewhere.`);
      this.locks.set(this.instance, release);
    }
    this.sequence += 1;
    const path = join(this.directory, `settlements.${this.instance}.${String(this.sequence).padStart(6, '0')}.jsonl`);
    const handle = await open(path, 'a');
    // The new file's directory entry must survive a crash too, or its fsynced entries would be unreachable.
    await syncDirectory(this.directory);
    this.current = { path, handle, bytes: 0 };
    return this.current;
  }

  private async closeCurrent(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    await current?.handle.close().catch(() => undefined);
  }

  /** A failed write: counted; the first of an outage turns the journal unavailable and starts the retries. */
  private writeFailed(error: unknown, context: string): void {
    this.counts.writeFailures += 1;
    if (this.failure !== undefined) {
      // The latest reason is the one worth showing (a full disk may have become a read-only one).
      this.failure = {
        ...this.failure,
        error,
        reason: `${context} in ${this.directory} failed: ${describe(error)}`,
        code: errorCode(error),
      };
      return;
    }
    this.failure = {
      since: Date.now(),
      error,
      reason: `${context} in ${this.directory} failed: ${describe(error)}`,
      code: errorCode(error),
    };
    this.retryTimer ??= setInterval(() => void this.retry(), this.retryMs).unref();
    this.onUnavailable(error, context);
  }

  /** A write went to disk: the journal is available again. */
  private writable(): void {
    if (this.failure === undefined) return;
    this.failure = undefined;
    clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.onRecovered();
  }

  /** While unavailable: the unwritten entries are written again, or with none left, a probe file. */
  private async retry(): Promise<void> {
    if (this.retrying || this.pumping !== undefined || this.failure === undefined) return;
    this.retrying = true;
    try {
      if (this.unwritten.size > 0) {
        await this.writeUnwritten();
        return;
      }
      try {
        await this.probeDirectory();
        if (!this.locks.has(this.instance)) {
          const release = await this.lock(this.instance);
          if (release === undefined)
            throw new Error(`The journal lock of this instance (${this.instance}) is held elsewhere.`);
          await release();
        }
      } catch (error) {
        this.writeFailed(error, 'a probe write to the journal');
        return;
      }
      this.writable();
    } finally {
      this.retrying = false;
    }
  }

  /** Queues every unwritten entry for one more write and waits for the pump. */
  private async writeUnwritten(): Promise<void> {
    const queued = new Set(this.queue.map((waiting) => waiting.entry.usage.requestId));
    for (const entry of this.unwritten.values()) {
      if (!queued.has(entry.usage.requestId))
        this.queue.push({ line: encodeJournalLine(entry), entry, done: () => {}, retry: true });
    }
    this.pumping ??= this.pump();
    while (this.pumping !== undefined) await this.pumping;
  }

  /** Creates the directory, then writes, flushes and deletes a file there: throws what failed. */
  private async probeDirectory(): Promise<void> {
    const step = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
      try {
        return await work();
      } catch (error) {
        throw new Error(`cannot ${what}: ${describe(error)}`, { cause: error });
      }
    };
    await step('create the directory', () => mkdir(this.directory, { recursive: true }));
    const path = join(this.directory, `probe.${this.instance}.tmp`);
    const handle = await step('create a file in it', () => open(path, 'w'));
    try {
      await step('write a file in it', () => handle.write('probe\n'));
      await step('flush a file in it to disk', () => handle.datasync());
    } finally {
      await handle.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
    }
  }

  /** Deletes one batch of files whose entries are all applied; false when there was none. */
  private async deleteAppliedFiles(): Promise<boolean> {
    const done = [...this.files].filter(([, file]) => file.pending.size === 0);
    if (done.length === 0) return false;
    for (const [path] of done) {
      if (path === this.current?.path) await this.closeCurrent();
      this.files.delete(path);
      // A delete lost in a crash only means the file is replayed again: every entry is then found applied.
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') this.onError(error, 'deleting a replayed journal file');
      });
    }
    // An adopted instance whose files are all gone: its lock goes too.
    for (const [instance, release] of this.locks) {
      if (instance === this.instance || [...this.files.values()].some((file) => file.instance === instance)) continue;
      this.locks.delete(instance);
      await release().catch(() => undefined);
    }
    return true;
  }

  /** The lock of an instance's journal, or undefined when its owner holds it (a live instance); throws on other failures. */
  private async lock(instance: string): Promise<(() => Promise<void>) | undefined> {
    // Loaded on first use: a gateway that never journals loads it only for its start-up check.
    const { lock } = await import('proper-lockfile');
    try {
      return await lock(join(this.directory, `settlements.${instance}`), {
        realpath: false,
        stale: this.staleMs,
        update: Math.max(1_000, Math.floor(this.staleMs / 3)),
        retries: 0,
        onCompromised: (error) => this.compromised(instance, error),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOCKED') return undefined;
      throw error;
    }
  }

  /**
   * The lock could not be refreshed in time (the process was frozen past the stale limit) and another instance
   * may have adopted the files: this instance stops writing to them. Its pending entries stay in memory and are
   * still replayed; a settlement replayed by both is applied once.
   */
  private compromised(instance: string, error: Error): void {
    this.onError(error, `the journal lock of ${instance} was lost`);
    this.locks.delete(instance);
    if (instance === this.instance) void this.closeCurrent();
  }
}

/** The first system error code along an error's causes. */
function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 4; depth++) {
    const { code } = current as { code?: unknown };
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** An error in one line: the system's code and message (`EACCES: permission denied, open '…'`). */
function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Every entry in a journal directory, read without locking (for `tollgate ledger verify`). */
export async function readJournalDirectory(
  directory: string,
): Promise<{ entries: JournalEntry[]; unreadableLines: number; files: number }> {
  let names: string[];
  try {
    names = (await readdir(directory)).filter((name) => FILE_NAME.test(name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], unreadableLines: 0, files: 0 };
    throw error;
  }
  const entries: JournalEntry[] = [];
  let unreadableLines = 0;
  for (const name of names.sort()) {
    const decoded = decodeJournal(await readFile(join(directory, name), 'utf8').catch(() => ''));
    entries.push(...decoded.entries);
    unreadableLines += decoded.unreadableLines;
  }
  return { entries, unreadableLines, files: names.length };
}
