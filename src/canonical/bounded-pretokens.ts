/**
 * BPE tokenizers (o200k included) split text into pre-tokens first, and a run of whitespace or a run of
 * non-whitespace with no break (`aaaa…`, `....`, 7 MB of spaces) is one pre-token whose merge work grows with the
 * square of its length: 16,000 spaces took a quarter of a second, a body-sized run hours, all on the event loop.
 * Counting such runs in slices keeps the cost linear and moves a count by at most about a token per slice;
 * ordinary text never has runs this long and is counted whole.
 */
export const LONG_RUN = 256;

/**
 * Calls `visit` with consecutive pieces of `text` that together are `text`, cut only inside runs of whitespace
 * or of non-whitespace longer than `maxRun` (a cut every `maxRun` characters of such a run). A plain loop: a
 * regular expression over a multi-megabyte run (`/(\S{256,})/`) overflows V8's regexp stack.
 */
export function forEachBoundedPiece(text: string, visit: (piece: string) => void, maxRun = LONG_RUN): void {
  if (text.length <= maxRun) {
    if (text.length > 0) visit(text);
    return;
  }
  let pieceStart = 0;
  let runStart = 0;
  let runIsSpace = isWhitespace(text.charCodeAt(0));
  for (let index = 1; index < text.length; index++) {
    const space = isWhitespace(text.charCodeAt(index));
    if (space !== runIsSpace) {
      runIsSpace = space;
      runStart = index;
    } else if (index - runStart >= maxRun) {
      visit(text.slice(pieceStart, index));
      pieceStart = index;
      runStart = index;
    }
  }
  visit(text.slice(pieceStart));
}

/** The characters of JavaScript's `\s` (what the tokenizers' pre-token patterns mean by whitespace). */
function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
