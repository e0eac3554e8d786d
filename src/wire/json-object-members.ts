/** One top-level member of a JSON object text: `"key": value`, as a byte range of the text. */
export interface JsonMember {
  /** The key, as parsed (escapes resolved). */
  readonly key: string;
  /** Offset of the key's opening quote. */
  readonly start: number;
  /** Offset just past the value. */
  readonly end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/**
 * The top-level members of `bytes`, a JSON text already known to parse, in order with their byte ranges. Undefined
 * when the text is not one object, repeats a key (the parser keeps only the last), or holds a number that
 * JSON.stringify would write otherwise (`1.0`, `1e3`, `-0`, `1e400`): then a member's bytes are exactly what
 * serialising its parsed value gives, up to whitespace, key order and string escapes, which no JSON parser reads
 * differently. Strings are skipped with `indexOf` (memchr), so a long prompt costs a scan for its quotes, not a
 * walk of its characters.
 */
export function topLevelMembers(bytes: Buffer): JsonMember[] | undefined {
  let at = skipWhitespace(bytes, 0);
  if (bytes[at] !== OPEN_BRACE) return undefined;
  at = skipWhitespace(bytes, at + 1);
  const members: JsonMember[] = [];
  if (bytes[at] === CLOSE_BRACE) return members;
  const keys = new Set<string>();
  for (;;) {
    if (bytes[at] !== QUOTE) return undefined;
    const start = at;
    const keyEnd = stringEnd(bytes, at);
    if (keyEnd < 0) return undefined;
    const key = JSON.parse(bytes.toString('utf8', start, keyEnd)) as string;
    if (keys.has(key)) return undefined;
    keys.add(key);
    at = skipWhitespace(bytes, keyEnd);
    if (bytes[at] !== COLON) return undefined;
    const end = valueEnd(bytes, skipWhitespace(bytes, at + 1));
    if (end < 0) return undefined;
    members.push({ key, start, end });
    at = skipWhitespace(bytes, end);
    if (bytes[at] === CLOSE_BRACE) return members;
    if (bytes[at] !== COMMA) return undefined;
    at = skipWhitespace(bytes, at + 1);
  }
}

function skipWhitespace(bytes: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const byte = bytes[at];
    if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return at;
    at++;
  }
}

/** Offset just past the string literal opening at `open`, or -1 if it does not close. */
function stringEnd(bytes: Buffer, open: number): number {
  let quote = bytes.indexOf(QUOTE, open + 1);
  while (quote >= 0) {
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    quote = bytes.indexOf(QUOTE, quote + 1);
  }
  return -1;
}

/** Offset just past the value starting at `start`, or -1 if it holds a number not in JSON.stringify's form. */
function valueEnd(bytes: Buffer, start: number): number {
  let at = start;
  let depth = 0;
  do {
    const byte = bytes[at];
    if (byte === undefined) return -1;
    if (byte === QUOTE) {
      at = stringEnd(bytes, at);
      if (at < 0) return -1;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
      at++;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
      at++;
    } else if (byte === MINUS || (byte >= DIGIT_0 && byte <= DIGIT_9)) {
      const end = numberEnd(bytes, at);
      const text = bytes.toString('latin1', at, end);
      if (String(Number(text)) !== text) return -1;
      at = end;
    } else if (byte >= 0x61 && byte <= 0x7a) {
      // true, false, null
      while (bytes[at]! >= 0x61 && bytes[at]! <= 0x7a) at++;
    } else {
      // whitespace, commas and colons inside a container
      at++;
    }
  } while (depth > 0);
  return at;
}

function numberEnd(bytes: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const byte = bytes[at];
    const numeric =
      byte !== undefined &&
      ((byte >= DIGIT_0 && byte <= DIGIT_9) ||
        byte === MINUS ||
        byte === 0x2b ||
        byte === 0x2e ||
        byte === 0x65 ||
        byte === 0x45);
    if (!numeric) return at;
    at++;
  }
}
