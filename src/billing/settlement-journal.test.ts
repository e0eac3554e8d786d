import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeJournalLine, type JournalEntry } from './settlement-journal-entry.js';
import { readJournalDirectory, SettlementJournal } from './settlement-journal.js';

function entry(requestId: string): JournalEntry {
  return {
    usage: {
      requestId, accountId: 'acct_1', apiKeyId: 'key_1', model: 'beta-5.4', family: 'beta', inputTokens: 10, cacheReadTokens: 2,
      cacheWriteTokens: 0, outputTokens: 7, reasoningTokens: 0, status: 'ok', stream: true, latencyMs: 42, createdAt: 1_700_000_000_000,
      rawUsage: '{"prompt_tokens":12}', costNano: 0n, freeTokens: 0, unbilledNano: 0n, route: '/v1/responses',
    },
    prices: { input: 2_500n, output: 15_000n, cacheRead: 250n, cacheWrite: 2_500n },
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

    for (let index = 0; index < 19; index++) own.applied(`req_${index}`, index % 2 === 0 ? 'settled' : 'already_settled');
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
});
