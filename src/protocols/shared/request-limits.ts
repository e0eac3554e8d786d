/**
 * Per-request limits both client protocols enforce in their schemas (on top of the body size limit and the
 * JSON shape limits of `src/http/json-body-parser.ts`). They bound the work one request can cause: every message
 * is decoded, mapped for the vendor and counted by the tokenizer for the reservation.
 */
export const MAX_MESSAGES = 10_000;
export const TOO_MANY_MESSAGES = `may hold at most ${MAX_MESSAGES} messages`;
