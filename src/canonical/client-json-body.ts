/**
 * The bytes a client's JSON body arrived as, kept beside its parsed value so that a vendor body equal to it in
 * most members can reuse those bytes instead of serialising the same text again (`src/providers/vendor-json-body.ts`).
 */
export interface ClientJsonBody {
  /** The body as parsed: the value each reused member's bytes are checked against. */
  readonly value: Readonly<Record<string, unknown>>;
  /** The body exactly as received (valid UTF-8 is checked where the bytes are reused). */
  readonly bytes: Uint8Array;
}

/**
 * Smaller bodies are serialised as before: reusing saved 16% of the encoding's instructions at 16 KB, and a small
 * body's fixed costs (finding its members, joining the parts) would outweigh it (decision 0022).
 */
export const MIN_REUSED_BODY_BYTES = 16 * 1024;

/** Keyed by the parsed value the body parser hands on, so nothing is added to the value itself. */
const bytesOfBody = new WeakMap<object, Uint8Array>();

/** Called by the body parser: the bytes `value` was parsed from, when they are worth reusing. */
export function rememberBodyBytes(value: unknown, bytes: Uint8Array): void {
  if (bytes.length >= MIN_REUSED_BODY_BYTES && isJsonObject(value)) bytesOfBody.set(value, bytes);
}

/** The client body `value` was parsed from, if the parser kept its bytes. */
export function clientJsonBodyOf(value: unknown): ClientJsonBody | undefined {
  if (!isJsonObject(value)) return undefined;
  const bytes = bytesOfBody.get(value);
  return bytes === undefined ? undefined : { value, bytes };
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
