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

/** How a request names its nonce and, for the paced check, the gap between chunks, inside its prompt text. */
export const NONCE_PATTERN = /bench-nonce-([0-9a-z]+)/;
export const PACE_PATTERN = /pace-ms=(\d+)/;

/** The reply's content deltas for one nonce: the first names the nonce, the rest are fixed words. */
export function replyChunks(nonce: string): string[] {
  const chunks = [`Reply ${nonce}:`];
  for (let i = 1; i < REPLY_CHUNKS; i++) chunks.push(` word${i}`);
  return chunks;
}

export function replyText(nonce: string): string {
  return replyChunks(nonce).join('');
}
