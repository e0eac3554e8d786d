/**
 * Reasoning signatures the simulator issues and later verifies, like Anthropic's thinking signatures and
 * Gemini's thought signatures: opaque to clients, checkable only by their issuer. Each is an HMAC under a
 * secret drawn once per process, so a signature from another vendor, another simulator process, or over
 * altered content fails verification — exactly the replay mistakes
 * (docs/protocols/translation.md#signed-thinking-in-tool-loops, #reasoning-replayed-only-to-its-vendor,
 * #gemini-thought-signatures-on-calls) the gateway's tests must catch. Within one process they are deterministic, so
 * stream and non-stream agree.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';

const SECRET = randomBytes(32);

function mac(purpose: string, content: string): Buffer {
  return createHmac('sha256', SECRET).update(purpose).update('\n').update(content).digest();
}

/** Anthropic: the signature of a thinking block, bound to its exact text. */
export function signThinking(thinking: string): string {
  return mac('anthropic-thinking', thinking).toString('base64');
}

export function isThinkingSignatureValid(thinking: string, signature: string): boolean {
  return signature === signThinking(thinking);
}

/** JSON with object keys sorted, so a call's arguments verify whatever key order a client re-serialised. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What a Gemini signature is bound to: a function call (name and arguments), or nothing (text parts). */
export interface SignedCall {
  name: string;
  args: unknown;
}

const NONCE_BYTES = 12;
const MAC_BYTES = 20;

function geminiMac(nonce: Buffer, call: SignedCall | undefined): Buffer {
  const content = call === undefined ? '' : `${call.name}\n${canonicalJson(call.args)}`;
  return mac('gemini-thought', `${nonce.toString('hex')}\n${content}`).subarray(0, MAC_BYTES);
}

/**
 * Gemini: a thought signature. `nonceSource` makes it differ per response and part (deterministically); a
 * signature issued on a function call part only verifies on a part with that same call.
 */
export function signGeminiPart(nonceSource: string, call?: SignedCall): string {
  const nonce = createHash('sha256').update(nonceSource).digest().subarray(0, NONCE_BYTES);
  return Buffer.concat([nonce, geminiMac(nonce, call)]).toString('base64');
}

export function isGeminiSignatureValid(signature: string, call?: SignedCall): boolean {
  const bytes = Buffer.from(signature, 'base64');
  if (bytes.length !== NONCE_BYTES + MAC_BYTES || bytes.toString('base64') !== signature) return false;
  return geminiMac(bytes.subarray(0, NONCE_BYTES), call).equals(bytes.subarray(NONCE_BYTES));
}
