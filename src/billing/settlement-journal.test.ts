import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeJournalLine, type JournalEntry } from './settlement-journal-entry.js';
import { readJournalDirectory, SettlementJournal, type SettlementJournalOptions } from './settlement-journal.js';

const run = promisify(execFile);

function entry(requestId: string): JournalEntry {
  return {
    usage: {
      requestId,
      accountId: 'acct_1',
      apiKeyId: 'key_1',
      model: 'beta-5.4',
      family: 'beta',
      inputTokens: 10,
      cacheReadTokens: 2,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      outputTokens: 7,
      reasoningTokens: 0,
      status: 'ok',
      stream: true,
      latencyMs: 42,
      createdAt: 1_700_000_000_000,
      rawUsage: '{"prompt_tokens":12}',
      costNano: 0n,
      freeTokens: 0,
      unbilledNano: 0n,
      route: '/v1/responses',
    },
    prices: { input: 2_500n, output: 15_000n, cacheRead: 250n, cacheWrite: 2_500n, cacheWrite1h: 2_500n },
    heldFreeTokens: 5,
    journaledAt: 1_700_000_000_100,
  };
}

let directory: string;
const journals: SettlementJournal[] = [];

function journal(staleMs = 60_000): SettlementJournal {
  const created = new SettlementJournal({ directory, staleMs });
  journals.push(created);
  return created;
}

/** A journal that reports what it is told, retrying quickly. */
function watchedJournal(at: string, options: Partial<SettlementJournalOptions> = {}) {
  const events: string[] = [];
  const created = new SettlementJournal({
    directory: at,
    retryMs: 20,
    onUnavailable: (error, context) => events.push(`unavailable: ${context}: ${(error as NodeJS.ErrnoException).code}`),
    onRecovered: () => events.push('recovered'),
    onAppended: () => events.push('appended'),
    ...options,
  });
  journals.push(created);
  return { journal: created, events };
}

/**
 * Tests run as root, whom permission bits do not stop: a journal is made unwritable by a file standing where its
 * parent directory should be (mkdir fails with ENOTDIR), or by the immutable attribute, which stops root too.
 */
async function blockWithFile(): Promise<{ at: string; unblock: () => Promise<void> }> {
  const blocker = join(directory, '..', 'blocked');
  await writeFile(blocker, 'not a directory');
  return { at: join(blocker, 'settlement-journal'), unblock: () => rm(blocker) };
}

const jsonlFiles = async () => (await readdir(directory).catch(() => [])).filter((name) => name.endsWith('.jsonl'));

beforeEach(async () => {
  directory = join(await mkdtemp(join(tmpdir(), 'tollgate-journal-')), 'settlement-journal');
});

afterEach(async () => {
  await Promise.all(journals.splice(0).map((each) => each.close()));
  await rm(join(directory, '..'), { recursive: true, force: true });
});

describe('settlement journal', () => {
  it('writes nothing, not even its directory, until a settlement is journaled', async () => {
    const quiet = journal();
    expect(await quiet.adopt()).toBe(0);
    await quiet.close();
    await expect(readdir(directory)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('appends concurrent settlements to one file, each exactly as given, and deletes the file once all are applied', async () => {
    const own = journal();
    const written = await Promise.all(Array.from({ length: 20 }, (_, index) => own.append(entry(`req_${index}`))));
    expect(written.every((durable) => durable)).toBe(true);
    const [file] = await jsonlFiles();
    expect(await jsonlFiles()).toHaveLength(1);
    const onDisk = await readJournalDirectory(directory);
    expect(onDisk).toMatchObject({ files: 1, unreadableLines: 0 });
    expect(onDisk.entries).toEqual(Array.from({ length: 20 }, (_, index) => entry(`req_${index}`)));
    expect(own.stats()).toMatchObject({ pending: 20, journaled: 20 });

    for (let index = 0; index < 19; index++)
      own.applied(`req_${index}`, index % 2 === 0 ? 'settled' : 'already_settled');
    await own.close();
    // Not all applied: the file stays, holding all 20 lines (applied ones are skipped on replay by the store).
    expect(await jsonlFiles()).toEqual([file]);
    expect(own.pendingEntries().map((pending) => pending.usage.requestId)).toEqual(['req_19']);
    own.applied('req_19', 'settled');
    await own.close();
    expect(await jsonlFiles()).toEqual([]);
    expect(own.stats()).toMatchObject({ pending: 0, journaled: 20, replayed: 11, alreadyApplied: 9 });
  });

  it('another instance adopts a journal whose owner stopped, but never the journal of a live one', async () => {
    const live = journal();
    await live.append(entry('req_live'));
    const other = journal();
    expect(await other.adopt()).toBe(0);

    await live.close();
    expect(await other.adopt()).toBe(1);
    expect(other.pendingEntries()).toEqual([entry('req_live')]);
    // A third instance finds it taken.
    expect(await journal().adopt()).toBe(0);
    other.applied('req_live', 'settled');
    await other.close();
    expect(await readdir(directory)).toEqual([]);
  });

  it("adopts a crashed instance's journal once its lock is stale, skipping a torn last line", async () => {
    await mkdir(directory, { recursive: true });
    const lines = encodeJournalLine(entry('req_a')) + encodeJournalLine(entry('req_b'));
    const torn = encodeJournalLine(entry('req_c')).slice(0, 60);
    await writeFile(join(directory, 'settlements.crashed1.000001.jsonl'), lines + torn);
    // The dead owner's lock, last refreshed 3 s ago.
    const lock = join(directory, 'settlements.crashed1.lock');
    await mkdir(lock);
    const past = new Date(Date.now() - 3_000);
    await utimes(lock, past, past);

    expect(await journal(10_000).adopt()).toBe(0);
    const adopter = journal(2_000);
    expect(await adopter.adopt()).toBe(2);
    expect(adopter.pendingEntries().map((pending) => pending.usage.requestId)).toEqual(['req_a', 'req_b']);
    expect(adopter.stats()).toMatchObject({ pending: 2, unreadableLines: 1 });
  });

  it('reads a corrupted line as unreadable, not as an entry', async () => {
    await mkdir(directory, { recursive: true });
    const good = encodeJournalLine(entry('req_ok'));
    const flipped = encodeJournalLine(entry('req_bad')).replace('"inputTokens":10', '"inputTokens":99');
    await writeFile(join(directory, 'settlements.x1.000001.jsonl'), flipped + good + '\u0000'.repeat(40) + '\n');
    const read = await readJournalDirectory(directory);
    expect(read.entries.map((each) => each.usage.requestId)).toEqual(['req_ok']);
    expect(read.unreadableLines).toBe(2);
    expect((await readFile(join(directory, 'settlements.x1.000001.jsonl'), 'utf8')).split('\n')).toHaveLength(4);
  });

  it('checks at start-up that its directory takes files, a flush and a lock, and leaves nothing there', async () => {
    await journal().verifyUsable();
    expect(await readdir(directory)).toEqual([]);
    // A file where the directory should be, and a directory under a file.
    await rm(directory, { recursive: true });
    await writeFile(directory, 'a file');
    await expect(journal().verifyUsable()).rejects.toThrow(/^cannot create the directory: EEXIST/);
    await expect(new SettlementJournal({ directory: join(directory, 'journal') }).verifyUsable()).rejects.toThrow(
      /^cannot create the directory: ENOTDIR/,
    );
  });

  it('when it cannot be written: unavailable, told once, nothing counted as journaled, the entries kept for replay and written once it can', async () => {
    const { at, unblock } = await blockWithFile();
    const { journal: blocked, events } = watchedJournal(at);
    await expect(blocked.verifyUsable()).rejects.toThrow(/ENOTDIR/);

    expect(await Promise.all([blocked.append(entry('req_1')), blocked.append(entry('req_2'))])).toEqual([false, false]);
    expect(blocked.unavailable()).toMatchObject({ code: 'ENOTDIR', reason: expect.stringContaining(at) });
    expect(await blocked.append(entry('req_3'))).toBe(false);
    expect(blocked.stats()).toMatchObject({ pending: 0, unwritten: 3, journaled: 0, unavailable: true });
    expect(blocked.stats().writeFailures).toBeGreaterThanOrEqual(2);
    expect(blocked.pendingEntries().map((each) => each.usage.requestId)).toEqual(['req_1', 'req_2', 'req_3']);
    // The retries keep failing: still unavailable, told once.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(blocked.unavailable()).toBeDefined();
    expect(events).toEqual(['unavailable: writing settlements to the journal: ENOTDIR']);

    await unblock();
    await expect.poll(() => blocked.unavailable(), { timeout: 2_000, interval: 20 }).toBeUndefined();
    expect(events.slice(1)).toEqual(['appended', 'appended', 'appended', 'recovered']);
    expect((await readJournalDirectory(at)).entries).toEqual([entry('req_1'), entry('req_2'), entry('req_3')]);
    expect(blocked.stats()).toMatchObject({ pending: 3, unwritten: 0, journaled: 3, unavailable: false });
    expect(await blocked.append(entry('req_4'))).toBe(true);
  });

  it('entries the store takes while the journal is down are never written; a probe write makes it available again', async () => {
    const { at, unblock } = await blockWithFile();
    const { journal: blocked, events } = watchedJournal(at);
    await Promise.all([blocked.append(entry('req_a')), blocked.append(entry('req_b'))]);
    blocked.applied('req_a', 'settled');
    blocked.applied('req_b', 'already_settled');
    expect(blocked.stats()).toMatchObject({
      pending: 0,
      unwritten: 0,
      replayed: 1,
      alreadyApplied: 1,
      unavailable: true,
    });

    await unblock();
    await expect.poll(() => blocked.unavailable(), { timeout: 2_000, interval: 20 }).toBeUndefined();
    expect(events).toEqual(['unavailable: writing settlements to the journal: ENOTDIR', 'recovered']);
    // The probe left nothing behind, and nothing was journaled.
    expect(await readdir(at)).toEqual([]);
    expect(blocked.stats()).toMatchObject({ journaled: 0 });
  });

  it('a directory that refuses new files (immutable: root too) makes it unavailable until the directory takes them again', async () => {
    await mkdir(directory, { recursive: true });
    await run('chattr', ['+i', directory]);
    try {
      await expect(writeFile(join(directory, 'x'), '')).rejects.toMatchObject({ code: 'EPERM' });
      const { journal: frozen } = watchedJournal(directory);
      await expect(frozen.verifyUsable()).rejects.toThrow(/^cannot create a file in it: EPERM/);
      expect(await frozen.append(entry('req_frozen'))).toBe(false);
      expect(frozen.unavailable()?.code).toBe('EPERM');
      await run('chattr', ['-i', directory]);
      await expect.poll(() => frozen.unavailable(), { timeout: 2_000, interval: 20 }).toBeUndefined();
      expect((await readJournalDirectory(directory)).entries).toEqual([entry('req_frozen')]);
    } finally {
      await run('chattr', ['-i', directory]);
    }
  });
});
