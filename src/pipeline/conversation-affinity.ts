import { createHash } from 'node:crypto';
import type { CanonicalRequest } from '../canonical/request.js';

/** Bumped when what the key covers changes, so old and new keys never collide. */
const AFFINITY_VERSION = 'a1';
/** Inline media counts by its length and first characters: enough to tell conversations apart, cheap on megabytes. */
const MEDIA_SAMPLE = 1024;

/**
 * The conversation affinity key: the same for every turn of one conversation, different across conversations and
 * across API keys. A SHA-256 over the API key's id (never the secret), the model, and the prompt's stable prefix
 * (tools, system prompt, first user message), which every turn of a conversation repeats. Cache breakpoints are
 * left out: clients move them from turn to turn. 32 hex digits; no prompt text can be read back from it.
 */
export function conversationAffinityKey(apiKeyId: string, modelId: string, request: CanonicalRequest): string {
  const firstUser = request.messages.find((message) => message.role === 'user');
  const prefix = JSON.stringify(
    [AFFINITY_VERSION, apiKeyId, modelId, request.tools ?? [], request.system, firstUser?.content ?? []],
    stableParts,
  );
  return createHash('sha256').update(prefix).digest('hex').slice(0, 32);
}

function stableParts(this: unknown, key: string, value: unknown): unknown {
  if (key === 'cache') return undefined;
  if (key === 'data' && typeof value === 'string' && value.length > MEDIA_SAMPLE)
    return `${value.length}:${value.slice(0, MEDIA_SAMPLE)}`;
  return value;
}

/**
 * A provider call whose affinity key is computed on first read: most calls never need it (one credential, a
 * vendor without a cache key), and hashing a coding agent's tools costs tens of microseconds.
 */
export function withAffinityKey<T extends object>(
  call: T,
  apiKeyId: string,
  modelId: string,
  request: CanonicalRequest,
): T & { readonly affinityKey: string } {
  let key: string | undefined;
  return Object.defineProperty(call, 'affinityKey', {
    enumerable: true,
    get: () => (key ??= conversationAffinityKey(apiKeyId, modelId, request)),
  }) as T & { readonly affinityKey: string };
}
