import type { VendorName } from './request.js';

/**
 * Reasoning signatures as clients see them. A signature only means something to the vendor that made it, so
 * each one a client receives names its origin: Anthropic's travel untouched (an Anthropic client talking to an
 * Anthropic model sees exactly what the vendor sent), every other vendor's carries a `tg1.<vendor>.` tag.
 * When a client sends reasoning back, the tag tells the adapters whether they may replay it
 * (docs/protocols/translation.md#reasoning-replayed-only-to-its-vendor).
 */
const TAG_PREFIX = 'tg1.';
const TAGGED_VENDORS: ReadonlySet<string> = new Set(['openai', 'gemini', 'deepseek']);

export function tagSignature(vendor: VendorName, signature: string): string {
  return vendor === 'anthropic' ? signature : `${TAG_PREFIX}${vendor}.${signature}`;
}

export interface ParsedSignature {
  originVendor: VendorName | undefined;
  signature: string | undefined;
}

/** The origin and raw signature of what a client sent; an empty signature means unsigned reasoning. */
export function parseSignature(presented: string | undefined): ParsedSignature {
  if (presented === undefined || presented === '') return { originVendor: undefined, signature: undefined };
  if (presented.startsWith(TAG_PREFIX)) {
    const rest = presented.slice(TAG_PREFIX.length);
    const dot = rest.indexOf('.');
    const vendor = dot < 0 ? '' : rest.slice(0, dot);
    if (TAGGED_VENDORS.has(vendor)) {
      const signature = rest.slice(dot + 1);
      return { originVendor: vendor as VendorName, signature: signature === '' ? undefined : signature };
    }
  }
  return { originVendor: 'anthropic', signature: presented };
}
