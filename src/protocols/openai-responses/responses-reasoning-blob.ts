import { invalidRequest } from '../../canonical/errors.js';
import { parseSignature, tagSignature } from '../../canonical/reasoning-signature.js';
import type { ReasoningBlock, VendorName } from '../../canonical/request.js';

/**
 * A reasoning item's `encrypted_content` as the gateway writes it: the reasoning text and its signature, so a
 * client that replays the item (Codex with `store: false`) gives the vendor back exactly what it produced (Anthropic
 * checks the thinking text against its signature; Gemini and DeepSeek want their text back too). The signature is
 * tagged with its origin by the same rule as on the Anthropic route (`reasoning-signature.ts`), so reasoning reaches
 * again only the vendor that made it. Not encrypted: it is the client's own conversation, like the chat route's
 * `reasoning_content`; the prefix versions the format.
 */
const PREFIX = 'tgr1.';

interface Blob {
  /** Reasoning text. */
  t: string;
  /** Tagged signature (`tagSignature`). */
  s?: string;
  /** Anthropic `redacted_thinking` data. */
  r?: string;
}

export function encodeReasoningBlob(vendor: VendorName, block: ReasoningBlock): string {
  const blob: Blob = { t: block.text };
  const signature = tagSignature(vendor, block.signature ?? '');
  if (signature !== '') blob.s = signature;
  if (block.redactedData !== undefined) blob.r = block.redactedData;
  return PREFIX + Buffer.from(JSON.stringify(blob), 'utf8').toString('base64url');
}

/** A replayed `encrypted_content` → the reasoning block; a blob the gateway did not write is a 400 naming `param`. */
export function decodeReasoningBlob(presented: string, param: string): ReasoningBlock {
  const blob = presented.startsWith(PREFIX) ? parseBlob(presented.slice(PREFIX.length)) : undefined;
  if (blob === undefined) {
    throw invalidRequest(
      `'${param}' was not issued by this gateway: replay reasoning items exactly as the gateway returned them, or leave 'encrypted_content' out.`,
      param,
    );
  }
  const block: ReasoningBlock = { type: 'reasoning', text: blob.t };
  const { originVendor, signature } = parseSignature(blob.s);
  if (originVendor !== undefined) block.originVendor = originVendor;
  if (signature !== undefined) block.signature = signature;
  if (blob.r !== undefined) block.redactedData = blob.r;
  return block;
}

function parseBlob(encoded: string): Blob | undefined {
  try {
    const value = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as unknown;
    if (value === null || typeof value !== 'object') return undefined;
    const { t, s, r } = value as Record<string, unknown>;
    if (
      typeof t !== 'string' ||
      (s !== undefined && typeof s !== 'string') ||
      (r !== undefined && typeof r !== 'string')
    )
      return undefined;
    return { t, ...(s === undefined ? {} : { s }), ...(r === undefined ? {} : { r }) };
  } catch {
    return undefined;
  }
}
