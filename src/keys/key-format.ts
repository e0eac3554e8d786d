import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'sk-tg-';
/** 32 random bytes = 256 bits of entropy; base64url gives 43 characters. */
const KEY_ENTROPY_BYTES = 32;
const KEY_BODY_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(KEY_ENTROPY_BYTES).toString('base64url');
}

/** Whether a presented string has the shape of one of our keys (cheap check before any storage lookup). */
export function hasApiKeyShape(value: string): boolean {
  return value.startsWith(API_KEY_PREFIX) && KEY_BODY_PATTERN.test(value.slice(API_KEY_PREFIX.length));
}

/**
 * SHA-256 of the key, hex. A fast hash is right here: keys carry 256 random bits, so there is nothing to
 * brute-force, and the lookup sits on every request's path. Passwords use scrypt instead.
 */
export function hashApiKey(key: string): string {
  // The one-shot form: no Hash object per request (about a quarter of createHash's cost, measured).
  return hash('sha256', key, 'hex');
}

/**
 * Constant-time comparison of two digests (hex strings): every character is looked at whatever the first
 * difference, and nothing is allocated (decoding both into buffers for timingSafeEqual cost more than the
 * compare). Only the length may differ in time, and digests have one length.
 */
export function digestsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= a.charCodeAt(index) ^ b.charCodeAt(index);
  return difference === 0;
}

/** What the owner sees to recognise a key without it being usable: `sk-tg-…abcd`. */
export function apiKeyHint(key: string): string {
  return `${API_KEY_PREFIX}…${key.slice(-4)}`;
}
