import { createHash, hash, type Hash } from 'node:crypto';
import type { CanonicalRequest, ContentBlock } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { ProviderCall, UpstreamTrace } from '../providers/types.js';

/** Bumped when what the key covers changes, so old and new keys never collide. */
const AFFINITY_VERSION = 'a1';
/** Inline media counts by its length and first characters: enough to tell conversations apart, cheap on megabytes. */
const MEDIA_SAMPLE = 1024;
/**
 * A part longer than this (in UTF-16 units) is hashed on its own rather than joined to the others: joining copies it
 * into one flat string before it is encoded and hashed, which for a 256 KB first message cost as much as the hash.
 */
const LONG_PART = 16 * 1024;

/**
 * The conversation affinity key: the same for every turn of one conversation, different across conversations and
 * across API keys. A SHA-256 over the API key's id (never the secret), the model, and the prompt's stable prefix
 * (tools, system prompt, first user message), which every turn of a conversation repeats. Cache breakpoints are
 * left out: clients move them from turn to turn. 32 hex digits; no prompt text can be read back from it.
 */
export function conversationAffinityKey(apiKeyId: string, modelId: string, request: CanonicalRequest): string {
  // Each part length-prefixed, so no two different prefixes hash the same text; prompt text is hashed as it is,
  // not through JSON.stringify, which would copy and scan it once more. Short parts are joined and hashed in one
  // call, without a Hash object and a crossing into C++ per part; a long one goes to a Hash object in its own update.
  // Either way the bytes hashed are the same: a digit or a colon stands between any two updates, so no surrogate
  // pair forms across them.
  let text = '';
  let long: Hash | undefined;
  const part = (value: string) => {
    text += `${value.length}:`;
    if (value.length <= LONG_PART) {
      text += value;
      return;
    }
    long ??= createHash('sha256');
    long.update(text);
    long.update(value);
    text = '';
  };
  part(AFFINITY_VERSION);
  part(apiKeyId);
  part(modelId);
  part(JSON.stringify((request.tools ?? []).map(withoutBreakpoint)));
  part(String(request.system.length));
  for (const block of request.system) part(block.text);
  for (const block of request.messages.find((message) => message.role === 'user')?.content ?? []) {
    part(block.type);
    part(block.type === 'text' ? block.text : JSON.stringify(stableBlock(block)));
  }
  const digest = long === undefined ? hash('sha256', text, 'hex') : long.update(text).digest('hex');
  return digest.slice(0, 32);
}

function withoutBreakpoint<T extends object>(part: T): Omit<T, 'cache'> {
  if (!('cache' in part)) return part;
  const { cache: _cache, ...rest } = part;
  return rest;
}

/** A content block as the key sees it: no breakpoint, inline media by its length and first characters. */
function stableBlock(block: ContentBlock): unknown {
  if (block.type === 'tool-result') return { ...withoutBreakpoint(block), content: block.content.map(stableBlock) };
  if ((block.type === 'image' || block.type === 'document') && block.source.kind === 'base64') {
    const { data } = block.source;
    if (data.length > MEDIA_SAMPLE)
      return {
        ...withoutBreakpoint(block),
        source: { ...block.source, data: `${data.length}:${data.slice(0, MEDIA_SAMPLE)}` },
      };
  }
  return withoutBreakpoint(block);
}

/**
 * A provider call whose affinity key is computed on first read: most calls never need it (one credential, a
 * vendor without a cache key), and hashing a coding agent's 50 KB of tools and system prompt takes 0.1 ms or more.
 * A class with the getter on its prototype, not an accessor defined on each call object: V8 cannot share a map
 * between objects whose accessors are different closures, so every such object after the first was left in
 * dictionary mode, and each adapter's read of its fields was a dictionary lookup.
 */
export class AffinityKeyedCall implements ProviderCall {
  private key: string | undefined;

  constructor(
    readonly request: CanonicalRequest,
    readonly model: CatalogModel,
    readonly signal: AbortSignal,
    readonly requestId: string,
    readonly trace: UpstreamTrace | undefined,
    private readonly apiKeyId: string,
    /** The client's request, whose stable prefix the key covers. */
    private readonly prompt: CanonicalRequest,
  ) {}

  get affinityKey(): string {
    this.key ??= conversationAffinityKey(this.apiKeyId, this.model.id, this.prompt);
    return this.key;
  }
}
