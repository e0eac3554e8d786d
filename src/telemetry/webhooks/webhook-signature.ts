import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header a signed delivery carries: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (Stripe's scheme). */
export const SIGNATURE_HEADER = 'tollgate-signature';

/** How far a receiver should let a signature's time stray from its clock by default (replays older are refused). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

function hmacHex(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The `Tollgate-Signature` value for `body` signed at `timestamp` (Unix seconds). */
export function signatureHeader(secret: string, body: string, timestamp: number): string {
  return `t=${timestamp},v1=${hmacHex(secret, timestamp, body)}`;
}

/**
 * What a receiver does (docs/usage-export.md#verifying-a-signature): parse `t` and every `v1`, recompute the HMAC
 * over the raw body, compare in constant time, and refuse a `t` outside the tolerance. True when one `v1` matches.
 */
export function verifySignature(
  header: string,
  body: string,
  secret: string,
  options: { nowSeconds?: number; toleranceSeconds?: number } = {},
): boolean {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === 't' && value !== undefined && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && value !== undefined && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) return false;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, body), 'hex');
  // Every candidate is compared (no early exit on a match), each in constant time.
  let matched = false;
  for (const signature of signatures) {
    if (timingSafeEqual(expected, Buffer.from(signature, 'hex'))) matched = true;
  }
  return matched;
}
