/**
 * The vendor's own usage object as a usage record keeps it (`raw_usage`, JSON text), for audit: what the vendor said,
 * beside the canonical counts the request was billed on.
 *
 * Bounded: every vendor's usage object is well under 1 KB (Anthropic's with its cache and server-tool fields about
 * 400 bytes, Gemini's with per-modality details about 600), yet it comes from the network, and each one is written to
 * the usage row and to the settlement journal's line. One a vendor (or anything in the path) inflated would grow every
 * row and journal line with it, so past `MAX_RAW_USAGE_CHARS` the object is replaced by a marker saying so and how
 * long it was: valid JSON, never a cut-off fragment that could not be parsed back.
 */
export const MAX_RAW_USAGE_CHARS = 4_096;

export function boundedRawUsage(raw: unknown): string | null {
  if (raw === null || raw === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(raw);
  } catch {
    // A cycle or a BigInt: not JSON the vendor sent (it was parsed from JSON), so not worth keeping.
    return JSON.stringify({ tollgate_omitted: 'not serialisable' });
  }
  if (text === undefined) return null;
  if (text.length <= MAX_RAW_USAGE_CHARS) return text;
  return JSON.stringify({ tollgate_omitted: 'too large', chars: text.length });
}
