/**
 * Rendezvous (highest-random-weight) hashing: every credential gets a pseudo-random weight per key, and a key goes
 * to the available credential with the highest one. A fast non-cryptographic mix is enough: the keys are already
 * hashes (nothing to protect) and only an even spread matters.
 */

/** A credential's fixed seed, from its name (32-bit FNV-1a). */
export function rendezvousSeed(name: string): number {
  return fnv1a(name);
}

/** The weight of the credential with `seed` for `key`: an unsigned 32-bit number. */
export function rendezvousWeight(key: string, seed: number): number {
  return finalMix(fnv1a(key) ^ seed);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** MurmurHash3's finaliser: every input bit reaches every output bit, so nearby keys get unrelated weights. */
function finalMix(value: number): number {
  let hash = value;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
