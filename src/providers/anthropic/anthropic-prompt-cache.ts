import { hasCacheBreakpoints } from '../../canonical/cache-breakpoints.js';
import { countTextTokens, upperBoundRequestInputTokens } from '../../canonical/count-tokens.js';
import type { CacheBreakpoint, CanonicalRequest, ContentBlock } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import type { AnthropicCacheControl, AnthropicMessagesRequest } from '../../wire/anthropic-messages-wire.js';

/** The breakpoint every gateway-placed one is: Anthropic's default lifetime. */
const FIVE_MINUTES: AnthropicCacheControl = { type: 'ephemeral' };

/**
 * A canonical breakpoint as Anthropic spells it: 5 minutes as `{type: "ephemeral"}` (its default), 1 hour with ttl,
 * and the other members an Anthropic client gave it.
 */
export function cacheControlOf(cache: CacheBreakpoint): AnthropicCacheControl {
  const control: AnthropicCacheControl = cache.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  return cache.anthropicFields === undefined ? control : { ...control, ...cache.anthropicFields };
}

/** `block` with the breakpoint it carried in the canonical request, if any. */
export function withCacheControl<T extends { cache_control?: AnthropicCacheControl }>(
  block: T,
  cache: CacheBreakpoint | undefined,
): T {
  if (cache !== undefined) block.cache_control = cacheControlOf(cache);
  return block;
}

/**
 * Whether the gateway may place breakpoints for this request, by everything but the exact token count: the model
 * has it on, the client's protocol had no say in caching or said nothing (an Anthropic client that sent no
 * breakpoint would not be cached by Anthropic either, so it is not here), and a cheap upper bound of the prompt
 * reaches the model's minimum. Then the tokenizer is worth loading for the exact check.
 */
export function automaticCacheCandidate(request: CanonicalRequest, model: CatalogModel): boolean {
  const minimum = model.minCacheablePromptTokens;
  return (
    model.automaticCaching &&
    minimum !== undefined &&
    request.extensionsProtocol !== 'anthropic-messages' &&
    !hasCacheBreakpoints(request) &&
    upperBoundRequestInputTokens(request) >= minimum
  );
}

/** Whether the gateway places breakpoints: a candidate whose estimated prompt reaches the model's minimum. */
export function placesAutomaticBreakpoints(request: CanonicalRequest, model: CatalogModel): boolean {
  return automaticCacheCandidate(request, model) && promptReaches(request, model.minCacheablePromptTokens!);
}

/**
 * Characters tokenized at a time. Tokenizing costs 1 to 4 µs a character on the event loop, and a coding agent's
 * prompt runs to hundreds of thousands: counting stops as soon as the minimum is reached, a few slices in.
 */
const SLICE_CHARS = 4_096;
/** The flat estimates the gateway's request estimate uses for media (canonical/count-tokens.ts). */
const IMAGE_TOKENS = 1_600;
const DOCUMENT_TOKENS = 1_500;

/** Whether the prompt's tokens (the local tokenizer, media at their flat estimates) reach `minimum`. */
export function promptReaches(request: CanonicalRequest, minimum: number): boolean {
  let total = 0;
  for (const piece of promptPieces(request)) {
    if (typeof piece === 'number') total += piece;
    else
      for (let at = 0; at < piece.length && total < minimum; at += SLICE_CHARS)
        total += countTextTokens(piece.slice(at, at + SLICE_CHARS));
    if (total >= minimum) return true;
  }
  return false;
}

/** The prompt in Anthropic's order: texts to count, and flat token estimates for media. */
function* promptPieces(request: CanonicalRequest): Generator<string | number> {
  for (const tool of request.tools ?? []) {
    yield tool.name;
    if (tool.description !== undefined) yield tool.description;
    yield JSON.stringify(tool.parameters ?? {});
  }
  for (const block of request.system) yield block.text;
  for (const message of request.messages) for (const block of message.content) yield* blockPieces(block);
}

function* blockPieces(block: ContentBlock): Generator<string | number> {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      yield block.text;
      return;
    case 'image':
      yield IMAGE_TOKENS;
      return;
    case 'document':
      yield DOCUMENT_TOKENS;
      return;
    case 'tool-call':
      yield block.name;
      yield block.argumentsJson;
      return;
    case 'tool-result':
      for (const part of block.content) yield* blockPieces(part);
  }
}

/**
 * The gateway's breakpoints (docs/prompt-caching.md), 5 minutes each: one after tools and system (on the last
 * system block, or on the last tool when there is no system prompt), so another conversation with the same
 * instructions reads them; one on the last block of the last user turn, so the next turn of this conversation
 * reads everything up to it.
 */
export function placeAutomaticBreakpoints(body: AnthropicMessagesRequest): void {
  const system = Array.isArray(body.system) ? body.system.at(-1) : undefined;
  const prefix = system ?? body.tools?.at(-1);
  if (prefix !== undefined) prefix.cache_control = FIVE_MINUTES;
  const lastUser = body.messages.findLast((message) => message.role === 'user');
  const last = Array.isArray(lastUser?.content) ? lastUser.content.at(-1) : undefined;
  if (last !== undefined && last.type !== 'thinking' && last.type !== 'redacted_thinking')
    last.cache_control = FIVE_MINUTES;
}
