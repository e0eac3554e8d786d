import { parseSignature, tagSignature } from '../../canonical/reasoning-signature.js';
import type { ReasoningBlock, VendorName } from '../../canonical/request.js';

/**
 * The reasoning of a reply that called functions, carried in the `thoughtSignature` of its first `functionCall` part.
 *
 * Gemini clients keep a reply's signatures on the parts that carry them but may drop its thought parts: Gemini CLI
 * strips every `thought: true` part from its history (`geminiChat.ts`), as Google's own API allows. Other vendors
 * need their reasoning back in a tool loop (Anthropic refuses a tool_result turn whose assistant turn does not
 * open with its signed thinking), so the reasoning travels where Gemini puts its own signature: on the call.
 *
 *     tg1.reasoning.<base64url(JSON [{t: text, s: tagged signature, r?: redacted data}, …])>
 *
 * A Gemini-origin reasoning block is carried the same way; its thought signature also rides in the call's id
 * (gemini-tool-call-id.ts), which the Gemini adapter reads. Anything else in a `thoughtSignature` is an ordinary
 * (tagged) signature.
 */
const CARRIER_PREFIX = 'tg1.reasoning.';

interface CarriedBlock {
  t: string;
  s: string;
  r?: string;
}

export function packReasoning(blocks: readonly ReasoningBlock[], vendor: VendorName): string | undefined {
  if (blocks.length === 0) return undefined;
  const carried: CarriedBlock[] = blocks.map((block) => ({
    t: block.text,
    s: tagSignature(vendor, block.signature ?? ''),
    ...(block.redactedData === undefined ? {} : { r: block.redactedData }),
  }));
  return CARRIER_PREFIX + Buffer.from(JSON.stringify(carried), 'utf8').toString('base64url');
}

/** The reasoning blocks a carrier signature holds; undefined when `signature` is not a carrier. */
export function unpackReasoning(signature: string | undefined): ReasoningBlock[] | undefined {
  if (signature === undefined || !signature.startsWith(CARRIER_PREFIX)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(signature.slice(CARRIER_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const blocks: ReasoningBlock[] = [];
  for (const item of parsed as unknown[]) {
    if (item === null || typeof item !== 'object') return undefined;
    const { t, s, r } = item as Partial<CarriedBlock>;
    if (typeof t !== 'string' || typeof s !== 'string') return undefined;
    blocks.push(reasoningBlock(t, s, typeof r === 'string' ? r : undefined));
  }
  return blocks;
}

/** A thought as the canonical reasoning block, its origin read from the tag of its signature. */
export function reasoningBlock(
  text: string,
  presentedSignature: string | undefined,
  redactedData?: string,
): ReasoningBlock {
  const { originVendor, signature } = parseSignature(presentedSignature);
  return {
    type: 'reasoning',
    text,
    ...(signature === undefined ? {} : { signature }),
    ...(originVendor === undefined ? {} : { originVendor }),
    ...(redactedData === undefined ? {} : { redactedData }),
  };
}
