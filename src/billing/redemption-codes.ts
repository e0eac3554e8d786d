import { createHash, randomBytes } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import type { BillingRepository } from '../storage/billing-types.js';
import type { NanoUsd } from './money.js';

/**
 * Prepaid redemption codes: `TG-XXXX-XXXX-XXXX-XXXX`, 16 Crockford base32 characters = 80 random bits.
 * Only the SHA-256 of the canonical form is stored (like API keys), so a leaked table redeems nothing.
 * What a person types is normalised first: case, spaces, dashes, and the look-alikes Crockford's alphabet
 * leaves out (O → 0, I and L → 1), so a code read off paper still works.
 */

/** Crockford's base32: no I, L, O or U. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const PREFIX = 'TG';
const BODY_LENGTH = 16;
const GROUP_LENGTH = 4;
/** Operators mint codes in batches; one batch is one insert. */
export const MAX_CODES_PER_BATCH = 1000;

/** A fresh code in its canonical form, from 80 bits of `crypto.randomBytes`. */
export function generateRedemptionCode(): string {
  return formatBody(encodeBase32(randomBytes((BODY_LENGTH * 5) / 8)));
}

/**
 * The canonical `TG-XXXX-XXXX-XXXX-XXXX` form of what a user typed, or null when it cannot be a code.
 * The `TG` prefix is optional on input.
 */
export function normalizeRedemptionCode(input: string): string | null {
  let compact = input.toUpperCase().replace(/[\s\-_]+/g, '');
  if (compact.length === PREFIX.length + BODY_LENGTH && compact.startsWith(PREFIX))
    compact = compact.slice(PREFIX.length);
  if (compact.length !== BODY_LENGTH) return null;
  const body = compact.replace(/O/g, '0').replace(/[IL]/g, '1');
  for (const character of body) if (!ALPHABET.includes(character)) return null;
  return formatBody(body);
}

/** Hex SHA-256 of the canonical form: what storage keeps and looks up. */
export function hashRedemptionCode(canonical: string): string {
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/**
 * Mints `count` codes worth `amountNano` each, valid until `expiresAt` (epoch ms; null: forever); returns them in
 * clear text, the only time they exist as such.
 */
export async function createRedemptionCodes(
  billing: BillingRepository,
  amountNano: NanoUsd,
  count: number,
  at: number,
  expiresAt: number | null = null,
): Promise<string[]> {
  if (amountNano <= 0n) throw invalidRequest('A redemption code must be worth more than 0 USD.', 'usd');
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_CODES_PER_BATCH) {
    throw invalidRequest(`The number of codes must be between 1 and ${MAX_CODES_PER_BATCH}.`, 'count');
  }
  const codes = new Set<string>();
  while (codes.size < count) codes.add(generateRedemptionCode());
  const list = [...codes];
  await billing.createRedemptionCodes(
    list.map((code) => ({ codeHash: hashRedemptionCode(code), amountNano })),
    at,
    expiresAt,
  );
  return list;
}

export interface Redemption {
  amountNano: NanoUsd;
  balanceNano: NanoUsd;
}

/**
 * Credits the code's value to the account, once: a second use, by anyone, is a 409; an unknown code a 404;
 * text that cannot be a code a 400. Failures change nothing.
 */
export async function redeemCode(
  billing: BillingRepository,
  input: string,
  accountId: string,
  at: number,
): Promise<Redemption> {
  const canonical = normalizeRedemptionCode(input);
  if (canonical === null) {
    throw invalidRequest(`'code' is not a redemption code: expected the form ${PREFIX}-XXXX-XXXX-XXXX-XXXX.`, 'code');
  }
  const result = await billing.redeem(hashRedemptionCode(canonical), accountId, at);
  if (result.redeemed) return { amountNano: result.amountNano, balanceNano: result.balanceNano };
  if (result.reason === 'expired')
    throw new GatewayError('not_found', 'This redemption code has expired.', { param: 'code' });
  if (result.reason === 'already_redeemed') {
    throw new GatewayError('conflict', 'This redemption code has already been redeemed.', { param: 'code' });
  }
  throw new GatewayError('not_found', 'This redemption code does not exist.', { param: 'code' });
}

function formatBody(body: string): string {
  const groups: string[] = [];
  for (let index = 0; index < body.length; index += GROUP_LENGTH) groups.push(body.slice(index, index + GROUP_LENGTH));
  return [PREFIX, ...groups].join('-');
}

/** Big-endian, 5 bits per character; the input length is a multiple of 5 bytes, so there is no padding. */
function encodeBase32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(buffer >>> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  return out;
}
