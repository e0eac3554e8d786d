import { randomFillSync } from 'node:crypto';

/**
 * Random bytes from the CSPRNG, drawn in 4 kB batches: every request takes some for its ids, and one
 * `randomBytes` call per id (an OpenSSL draw plus a getpid check each) showed up in the gateway's profile.
 */
const pool = Buffer.alloc(4096);
let offset = pool.length;

/** `byteCount` random bytes as lower-case hex (2 digits per byte); at most 64 bytes per call. */
export function randomHex(byteCount: number): string {
  if (offset + byteCount > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + byteCount);
  offset += byteCount;
  return hex;
}
