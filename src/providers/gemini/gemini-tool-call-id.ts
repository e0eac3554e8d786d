import { randomBytes } from 'node:crypto';

/**
 * Tool-call ids handed to clients for Gemini calls (docs/protocols/translation.md#tool-calls, policy (b)).
 *
 * Gemini attaches a `thoughtSignature` to function-call parts that must come back on the same part in the next
 * request (Gemini 3 rejects the request otherwise: docs/protocols/translation.md#gemini-thought-signatures-on-calls),
 * and its call `id`, when it gives one, should be echoed in the matching `functionResponse`. OpenAI and Anthropic
 * clients round-trip only the tool-call id, so both travel inside it and no server-side state is needed:
 *
 *     call_<nonce>[__tgid__<hex(UTF-8 Gemini id)>][__tgsig__<base64url(UTF-8 signature)>]
 *
 * - Only `[A-Za-z0-9_-]`, the charset Anthropic requires of tool ids (OpenAI accepts it too).
 * - The nonce (alphanumerics) keeps ids unique when Gemini gives none, which is usual on the Developer API.
 * - The Gemini id is hex so it cannot contain `_`: the parse below is unambiguous although base64url may.
 *   The signature comes last and takes the rest of the id. It is encoded as text, not decoded from base64,
 *   so any string (a simulator's included) comes back byte for byte.
 * - A minted id and a vendor id are told apart, so a call Gemini gave no id is never sent back with one.
 *
 * Ids that do not have this shape (a client's own, another vendor's) decode to "nothing known".
 */

export interface GeminiToolCallReference {
  /** `functionCall.id` as Gemini sent it, when it sent one. */
  geminiId?: string;
  /** The part's `thoughtSignature`, when it had one. */
  thoughtSignature?: string;
}

const PREFIX = 'call_';
const ID_MARKER = '__tgid__';
const SIGNATURE_MARKER = '__tgsig__';
const ENCODED_ID = /^call_[A-Za-z0-9]+(?:__tgid__((?:[0-9a-f]{2})+))?(?:__tgsig__([A-Za-z0-9_-]+))?$/;

/** A fresh nonce for a minted id: 96 random bits, lowercase hex. */
export function mintNonce(): string {
  return randomBytes(12).toString('hex');
}

export function encodeGeminiToolCallId(reference: GeminiToolCallReference, nonce: string = mintNonce()): string {
  if (!/^[A-Za-z0-9]+$/.test(nonce)) throw new Error('A tool-call id nonce must be alphanumeric.');
  let id = PREFIX + nonce;
  if (reference.geminiId !== undefined && reference.geminiId !== '') {
    id += ID_MARKER + Buffer.from(reference.geminiId, 'utf8').toString('hex');
  }
  if (reference.thoughtSignature !== undefined && reference.thoughtSignature !== '') {
    id += SIGNATURE_MARKER + Buffer.from(reference.thoughtSignature, 'utf8').toString('base64url');
  }
  return id;
}

export function decodeGeminiToolCallId(id: string): GeminiToolCallReference {
  const match = ENCODED_ID.exec(id);
  if (match === null) return {};
  const reference: GeminiToolCallReference = {};
  const hexId = match[1];
  if (hexId !== undefined) reference.geminiId = Buffer.from(hexId, 'hex').toString('utf8');
  const encodedSignature = match[2];
  if (encodedSignature !== undefined) {
    const bytes = Buffer.from(encodedSignature, 'base64url');
    // A payload no encoder produces (an id truncated by a client) would decode to a wrong signature: send none.
    if (bytes.toString('base64url') === encodedSignature) reference.thoughtSignature = bytes.toString('utf8');
  }
  return reference;
}
