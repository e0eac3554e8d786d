import { mkdir, open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { randomHex } from '../ids/random-hex.js';
import { decodeJournal, encodeJournalLine, type JournalEntry } from './settlement-journal-entry.js';

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
  /** Failures of the journal's own files (a write, a lock, a directory that cannot be read), for the log. */
  onError?: (error: unknown, context: string) => void;
  /** Told of each settlement journaled (durable: on disk; otherwise kept in memory only). */
  onAppended?: (durable: boolean) => void;
}

export interface JournalCounts {
  /** Entries waiting to be applied (this instance's and the ones it adopted). */
  pending: number;
  /** Settlements journaled by this instance since it started. */
  journaled: number;
  /** Journaled settlements applied by replay, and ones found already applied (skipped). */
  replayed: number;
  alreadyApplied: number;
  /** Lines of adopted files that failed their checksum (a torn last line after a crash). */
  unreadableLines: number;
}

/** `settlements.<instance>.<sequence>.jsonl`: the instance that writes it, then its files in order. */
const FILE_NAME = /^settlements\.([a-z0-9]+)\.(\d+)\.jsonl$/;
/** Where entries live whose write failed: replayed from memory while the process lives. */
const MEMORY = '(memory)';

interface TrackedFile {
  /** Entries of the file not applied yet, by request id. */
  pending: Map<string, JournalEntry>;
  /** The instance that wrote it (this one's or an adopted one's). */
  instance: string;
}

interface Waiting {
  line: string;
  entry: JournalEntry;
  done: (durable: boolean) => void;
}

/**
 * The local settlement journal (design §4): settlements the store refused, appended to a file of this instance
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
 */
export class SettlementJournal {
  readonly directory: string;
  private readonly instance = `${Date.now().toString(36)}${randomHex(4)}`;
  private readonly staleMs: number;
  private readonly maxFileBytes: number;
  private readonly onError: (error: unknown, context: string) => void;
  private readonly onAppended: (durable: boolean) => void;
  private readonly files = new Map<string, TrackedFile>();
  /** The file of each pending request id. */
  private readonly fileOf = new Map<string, string>();
  /** Lock releases by instance (this one's, and each adopted one's). */
  private readonly locks = new Map<string, () => Promise<void>>();
  private current: { path: string; handle: FileHandle; bytes: number } | undefined;
  private sequence = 0;
  private queue: Waiting[] = [];
  /** The one task that writes, rotates and deletes files: never two at once. */
  private pumping: Promise<void> | undefined;
  private readonly counts = { journaled: 0, replayed: 0, alreadyApplied: 0, unreadableLines: 0 };

  constructor(options: SettlementJournalOptions) {
    this.directory = options.directory;
    this.staleMs = options.staleMs ?? 60_000;
    this.maxFileBytes = options.maxFileBytes ?? 16 * 1024 * 1024;
    this.onError = options.onError ?? (() => {});
    this.onAppended = options.onAppended ?? (() => {});
  }

  /**
   * Appends a settlement; resolves once it is on disk (true), or, when the file could not be written, false: the
   * entry is then kept in memory and still replayed while this process lives.
   */
  append(entry: JournalEntry): Promise<boolean> {
    this.counts.journaled += 1;
    return new Promise((done) => {
      this.queue.push({ line: encodeJournalLine(entry), entry, done });
      // Gather the settlements of this turn into one write and one fdatasync.
      if (this.pumping === undefined) this.pumping = new Promise((resolve) => setImmediate(resolve)).then(() => this.pump());
    });
  }

  /** Entries not applied yet, oldest file first. A snapshot: safe to apply while iterating. */
  pendingEntries(): JournalEntry[] {
    return [...this.files.values()].flatMap((file) => [...file.pending.values()]);
  }

  /** A journaled settlement the store has now (applied by replay, or found applied): forgotten, its file deleted once empty. */
  applied(requestId: string, outcome: 'settled' | 'already_settled'): void {
    const path = this.fileOf.get(requestId);
    if (path === undefined) return;
    this.fileOf.delete(requestId);
    const file = this.files.get(path);
    file?.pending.delete(requestId);
    if (outcome === 'settled') this.counts.replayed += 1;
    else this.counts.alreadyApplied += 1;
    if (file !== undefined && file.pending.size === 0) this.pumping ??= this.pump();
  }

  stats(): JournalCounts {
    return { pending: this.fileOf.size, ...this.counts };
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
      const release = await this.tryLock(instance);
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

  /** Writes what is queued, then closes the files and releases the locks. Pending entries stay on disk. */
  async close(): Promise<void> {
    while (this.pumping !== undefined) await this.pumping;
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
    let path = MEMORY;
    try {
      const current = await this.openCurrent();
      const text = batch.map((waiting) => waiting.line).join('');
      await current.handle.write(text);
      await current.handle.datasync();
      current.bytes += Buffer.byteLength(text);
      path = current.path;
    } catch (error) {
      this.onError(error, 'writing the settlement journal');
      // A half-written batch would leave a torn line in the middle of the file: new entries go to a new one.
      await this.closeCurrent();
    }
    this.track(path, this.instance, batch.map((waiting) => waiting.entry));
    for (const waiting of batch) {
      this.onAppended(path !== MEMORY);
      waiting.done(path !== MEMORY);
    }
    if (this.current !== undefined && this.current.bytes >= this.maxFileBytes) await this.closeCurrent();
  }

  private async openCurrent(): Promise<{ path: string; handle: FileHandle; bytes: number }> {
    if (this.current !== undefined) return this.current;
    await mkdir(this.directory, { recursive: true });
    if (!this.locks.has(this.instance)) {
      const release = await this.tryLock(this.instance);
      if (release === undefined) throw new Error(`The journal lock of this instance (${this.instance}) is held elsewhere.`);
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

  /** Deletes one batch of files whose entries are all applied; false when there was none. */
  private async deleteAppliedFiles(): Promise<boolean> {
    const done = [...this.files].filter(([, file]) => file.pending.size === 0);
    if (done.length === 0) return false;
    for (const [path] of done) {
      if (path === this.current?.path) await this.closeCurrent();
      this.files.delete(path);
      if (path === MEMORY) continue;
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

  /** The lock of an instance's journal, or undefined when its owner holds it (a live instance). */
  private async tryLock(instance: string): Promise<(() => Promise<void>) | undefined> {
    // Loaded on first use: a gateway that never journals never loads it (nor its exit hook).
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
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') this.onError(error, 'locking a settlement journal');
      return undefined;
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

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Every entry in a journal directory, read without locking (for `tollgate ledger verify`). */
export async function readJournalDirectory(directory: string): Promise<{ entries: JournalEntry[]; unreadableLines: number; files: number }> {
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
