import { crc32 } from 'node:zlib';
import { z } from 'zod';
import type { UsageRecord } from '../storage/types.js';
import type { ModelPrices } from './prices.js';

/**
 * One settlement the store could not take, as the journal keeps it: everything needed to bill it later exactly
 * as it would have been billed then. The usage row as settlement built it (the request's own times and latency,
 * so the ledger entry and the day it counts on are the same), the per-token prices it was priced with (a price
 * change before the replay does not touch it), and the free tokens its hold was taken with.
 */
export interface JournalEntry {
  /** Cost fields are zero: the store fills them at settlement, from `prices` and the hold it claims. */
  usage: UsageRecord;
  prices: ModelPrices;
  /** Free tokens of the request's hold, when it was admitted here (a hint for the store; the stored hold decides). */
  heldFreeTokens?: number;
  /** When the store refused it. */
  journaledAt: number;
}

const count = z.number().int().min(0);
const nano = z
  .string()
  .regex(/^\d{1,30}$/)
  .transform(BigInt);
/** A time in epoch ms: the line's JSON carries it as a number. */
const time = z.number().int().min(0);

const entrySchema = z.object({
  v: z.literal(1),
  usage: z.object({
    requestId: z.string().min(1),
    accountId: z.string().min(1),
    apiKeyId: z.string().min(1),
    model: z.string().min(1),
    family: z.string(),
    inputTokens: count,
    cacheReadTokens: count,
    cacheWriteTokens: count,
    /** Absent from entries journaled before 1-hour writes were counted apart: none then. */
    cacheWrite1hTokens: count.default(0),
    outputTokens: count,
    reasoningTokens: count,
    status: z.string().min(1),
    stream: z.boolean(),
    latencyMs: count,
    createdAt: time,
    rawUsage: z.string().nullable(),
    route: z.string().min(1).optional(),
    unbilledTokens: count.optional(),
    webSearchRequests: count.optional(),
    webFetchRequests: count.optional(),
    // Their cost, priced when the reply settled: a replay charges it as it is, a fee after the tokens.
    serverToolNano: nano.optional(),
    localInputTokens: count.optional(),
  }),
  prices: z
    .object({ input: nano, output: nano, cacheRead: nano, cacheWrite: nano, cacheWrite1h: nano.optional() })
    // An older entry has no 1-hour price and no 1-hour writes, so the 5-minute price stands in (it prices nothing).
    .transform((prices) => ({ ...prices, cacheWrite1h: prices.cacheWrite1h ?? prices.cacheWrite })),
  heldFreeTokens: count.optional(),
  journaledAt: time,
});

/**
 * One line: the CRC-32 of the JSON (8 hex digits), a space, the JSON, a newline. The checksum tells a complete
 * line from a torn one (a crash in the middle of a write) or from blocks a crash left zero-filled.
 */
export function encodeJournalLine(entry: JournalEntry): string {
  const { costNano: _cost, freeTokens: _free, unbilledNano: _unbilled, serverToolNano, ...usage } = entry.usage;
  const json = JSON.stringify({
    v: 1,
    usage: serverToolNano === undefined ? usage : { ...usage, serverToolNano: serverToolNano.toString() },
    prices: {
      input: entry.prices.input.toString(),
      output: entry.prices.output.toString(),
      cacheRead: entry.prices.cacheRead.toString(),
      cacheWrite: entry.prices.cacheWrite.toString(),
      cacheWrite1h: entry.prices.cacheWrite1h.toString(),
    },
    ...(entry.heldFreeTokens === undefined ? {} : { heldFreeTokens: entry.heldFreeTokens }),
    journaledAt: entry.journaledAt,
  });
  return `${checksum(json)} ${json}\n`;
}

export interface DecodedJournal {
  entries: JournalEntry[];
  /** Lines that fail their checksum or do not parse (a torn last line after a crash, corruption elsewhere). */
  unreadableLines: number;
}

/** The entries of a journal file's text, in order; unreadable lines are counted and skipped, never fatal. */
export function decodeJournal(text: string): DecodedJournal {
  const entries: JournalEntry[] = [];
  let unreadableLines = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const entry = decodeLine(line);
    if (entry === undefined) unreadableLines += 1;
    else entries.push(entry);
  }
  return { entries, unreadableLines };
}

function decodeLine(line: string): JournalEntry | undefined {
  const json = line.slice(9);
  if (line.length < 10 || line[8] !== ' ' || line.slice(0, 8) !== checksum(json)) return undefined;
  let parsed: z.output<typeof entrySchema>;
  try {
    parsed = entrySchema.parse(JSON.parse(json));
  } catch {
    return undefined;
  }
  return {
    usage: { ...parsed.usage, costNano: 0n, freeTokens: 0, unbilledNano: 0n },
    prices: parsed.prices,
    ...(parsed.heldFreeTokens === undefined ? {} : { heldFreeTokens: parsed.heldFreeTokens }),
    journaledAt: parsed.journaledAt,
  };
}

function checksum(json: string): string {
  return crc32(json).toString(16).padStart(8, '0');
}
