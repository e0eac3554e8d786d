import { hasCacheBreakpoints } from '../../canonical/cache-breakpoints.js';
import { estimateRequestInputTokens, upperBoundRequestInputTokens } from '../../canonical/count-tokens.js';
import type { CacheBreakpoint, CanonicalRequest } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import type { AnthropicCacheControl, AnthropicMessagesRequest } from '../../wire/anthropic-messages-wire.js';

/** The breakpoint every gateway-placed one is: Anthropic's default lifetime. */
const FIVE_MINUTES: AnthropicCacheControl = { type: 'ephemeral' };

/** A canonical breakpoint as Anthropic spells it: 5 minutes as `{type: "ephemeral"}` (its default), 1 hour with ttl. */
export function cacheControlOf(cache: CacheBreakpoint): AnthropicCacheControl {
  return cache.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
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
  return (
    automaticCacheCandidate(request, model) && estimateRequestInputTokens(request) >= model.minCacheablePromptTokens!
  );
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
