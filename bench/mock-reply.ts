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

/** The reply's content deltas for one nonce: the first names the nonce, the rest are fixed words. */
export function replyChunks(nonce: string, count = REPLY_CHUNKS): string[] {
  const chunks = [`Reply ${nonce}:`];
  for (let i = 1; i < count; i++) chunks.push(` word${i}`);
  return chunks;
}

export function replyText(nonce: string, count = REPLY_CHUNKS): string {
  return replyChunks(nonce, count).join('');
}
