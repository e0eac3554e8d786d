/**
 * What the bench's mock upstream answers, shared by the mock (which sends it) and the response checks
 * (which demand exactly it back, through the gateway or not). Each request carries a nonce the reply
 * starts with, so an answer meant for another request, or cached, or made up, fails the check.
 */

/** Content deltas per reply: the "20-chunk streams"; a non-stream reply is their concatenation. */
export const REPLY_CHUNKS = 20;
/** Usage the mock reports on every reply, in either protocol; the checks demand these exact numbers. */
export const PROMPT_TOKENS = 11;
export const COMPLETION_TOKENS = REPLY_CHUNKS;
/** A longer reply reports one completion token per content delta, as the 20-chunk one does. */
export function completionTokens(chunks: number): number {
  return chunks;
}

/** How a request names its nonce and, for the paced check, the gap between chunks, inside its prompt text. */
export const NONCE_PATTERN = /bench-nonce-([0-9a-z]+)/;
export const PACE_PATTERN = /pace-ms=(\d+)/;
/** A reply of another length than REPLY_CHUNKS (the long-stream shapes): the count travels in the prompt too. */
export const CHUNKS_PATTERN = /reply-chunks=(\d+)/;
/**
 * How the mock writes a stream's events to the socket. `per-event` (the default): each event in its own socket
 * write, as a vendor's server sends tokens as they come. `coalesced`: every event of one tick in one write (node:http
 * corks the socket for the rest of the tick), the older bench's shape, kept as a second figure.
 */
export type UpstreamWrites = 'per-event' | 'coalesced';
export const WRITES_PATTERN = /upstream-writes=(per-event|coalesced)/;
/**
 * The c10k mode's streams: each content delta after the first is ` t<ms>`, the mock's wall clock (ms since the
 * epoch, microsecond decimals) when it wrote that event, so the client can read how long the chunk took to arrive.
 */
export const STAMP_PATTERN = /stamp-chunks/;
const STAMP_IN_TEXT = / t(\d+\.\d+)/g;

/** The send times stamped in a piece of reply text (the content of one or more deltas), in ms since the epoch. */
export function chunkStamps(text: string): number[] {
  return [...text.matchAll(STAMP_IN_TEXT)].map((match) => Number(match[1]));
}

/** A stamped delta's text: the writer's wall clock now, with microseconds. */
export function stampNow(): string {
  return ` t${(performance.timeOrigin + performance.now()).toFixed(3)}`;
}

/** The reply's content deltas for one nonce: the first names the nonce, the rest are fixed words. */
export function replyChunks(nonce: string, count = REPLY_CHUNKS): string[] {
  const chunks = [`Reply ${nonce}:`];
  for (let i = 1; i < count; i++) chunks.push(` word${i}`);
  return chunks;
}

export function replyText(nonce: string, count = REPLY_CHUNKS): string {
  return replyChunks(nonce, count).join('');
}
