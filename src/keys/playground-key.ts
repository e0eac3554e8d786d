import type { NewApiKey } from '../storage/types.js';

/**
 * The dashboard playground's key: one per organisation, made on the playground's first request, so that a playground
 * reply is a request of the organisation like any other (its usage record names a key, its limits and the
 * organisation's apply) without a secret that could leak. Its id is derived from the organisation's, so no lookup
 * table is needed, and its
 * stored hash is not a SHA-256 hex digest, so no presented key can ever match it: it has no usable secret.
 */
const PLAYGROUND_KEY_PREFIX = 'key_playground_';

export const PLAYGROUND_KEY_NAME = 'Playground';

/** What the keys list shows in place of a secret's last characters. */
export const PLAYGROUND_KEY_HINT = 'no secret';

export function playgroundKeyId(accountId: string): string {
  return `${PLAYGROUND_KEY_PREFIX}${accountId}`;
}

export function isPlaygroundKeyId(keyId: string): boolean {
  return keyId.startsWith(PLAYGROUND_KEY_PREFIX);
}

/** The row of an organisation's playground key (full permissions: an admin may narrow them like any key's). */
export function newPlaygroundKey(accountId: string, now: number): NewApiKey {
  return {
    id: playgroundKeyId(accountId),
    accountId,
    name: PLAYGROUND_KEY_NAME,
    // Hex digests are 64 characters of [0-9a-f]: a colon never occurs in one, so this matches no presented key.
    keyHash: `playground:${accountId}`,
    hint: PLAYGROUND_KEY_HINT,
    createdAt: now,
    expiresAt: null,
  };
}
