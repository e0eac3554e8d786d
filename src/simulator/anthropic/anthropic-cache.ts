/**
 * Anthropic's prompt cache in the simulator: the request's tools, system blocks and message content blocks in
 * that order (Anthropic's cache order), its `cache_control` breakpoints, including the top-level automatic form
 * (one breakpoint on the last block), and the model's minimum cacheable length, given to the breakpoint cache.
 */
import type { SimulatorDirectives } from '../fault-directives.js';
import { breakpointCache } from '../prompt-cache/breakpoint-cache.js';
import { cacheScope, directiveCounts, realCacheFor, type CacheCounts } from '../prompt-cache/cache-counts.js';
import { unitOf, reconcileTokens, type CacheTtl, type CacheUnit } from '../prompt-cache/cache-units.js';
import { countPromptWithin, countTokens } from '../reply-engine.js';
import type { SimulatorExchange } from '../simulator-exchange.js';
import { blockTokens } from './anthropic-prompt.js';
import type { AnthropicBlock, AnthropicRequest } from './anthropic-types.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_SYSTEM = 3;
const DEFAULT_MINIMUM = 1_024;
/** Minimum cacheable prompt per model, from Anthropic's prompt-caching guide; the others cache from 1,024. */
const MINIMUMS: ReadonlyArray<readonly [RegExp, number]> = [
  [/^claude-(opus-4-[5-7]|haiku-4-5)/, 4_096],
  [/^claude-(3-5-haiku|3-haiku|haiku-3)/, 2_048],
];

export function minimumCacheableTokens(model: string): number {
  return MINIMUMS.find(([pattern]) => pattern.test(model))?.[1] ?? DEFAULT_MINIMUM;
}

/** The breakpoint a `cache_control` value sets (validation has checked its type and ttl). */
function breakpointOf(value: unknown): CacheTtl | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as { ttl?: unknown }).ttl === '1h' ? '1h' : '5m';
}

/** A block's breakpoint: its own, or for a tool result the last one on a block inside it. */
function blockBreakpoint(block: AnthropicBlock): CacheTtl | undefined {
  const own = breakpointOf((block as { cache_control?: unknown }).cache_control);
  if (own !== undefined || block.type !== 'tool_result' || !Array.isArray(block.content)) return own;
  return block.content
    .map((inner) => breakpointOf((inner as { cache_control?: unknown }).cache_control))
    .findLast((ttl) => ttl !== undefined);
}

/** The block as the model reads it: a breakpoint is not part of the prompt, so moving one keeps the prefix. */
function withoutBreakpoint(value: object): object {
  const { cache_control: _breakpoint, ...content } = value as { cache_control?: unknown };
  return content;
}

function countWithin(count: () => number): () => number {
  return () => countPromptWithin(count);
}

/** The request's cache units in Anthropic's order: tools → system → messages. */
export function anthropicCacheUnits(request: AnthropicRequest, total: number): CacheUnit[] {
  const units: CacheUnit[] = [];
  for (const tool of request.tools ?? []) {
    const content = withoutBreakpoint(tool);
    units.push(
      unitOf(
        'tool',
        content,
        countWithin(() => countTokens(JSON.stringify(content))),
        breakpointOf((tool as { cache_control?: unknown }).cache_control),
      ),
    );
  }
  if (typeof request.system === 'string') {
    const text = request.system;
    if (text.length > 0)
      units.push(
        unitOf(
          'system',
          text,
          countWithin(() => TOKENS_PER_SYSTEM + countTokens(text)),
        ),
      );
  } else {
    (request.system ?? []).forEach((block, index) => {
      const overhead = index === 0 ? TOKENS_PER_SYSTEM : 0;
      units.push(
        unitOf(
          `system:${index === 0}`,
          block.text,
          countWithin(() => overhead + countTokens(block.text)),
          breakpointOf((block as { cache_control?: unknown }).cache_control),
        ),
      );
    });
  }
  request.messages.forEach((message, messageIndex) => {
    const countThinking = message.role === 'assistant' && messageIndex >= request.messages.length - 2;
    const blocks: AnthropicBlock[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (blocks.length === 0) units.push(unitOf(`empty:${message.role}`, '', () => TOKENS_PER_MESSAGE));
    blocks.forEach((block, blockIndex) => {
      const overhead = blockIndex === 0 ? TOKENS_PER_MESSAGE : 0;
      units.push(
        unitOf(
          `${message.role}:${blockIndex === 0}`,
          withoutBreakpoint(block),
          countWithin(() => overhead + blockTokens(block, countThinking)),
          blockBreakpoint(block),
          countThinking ? ':thinking' : '',
        ),
      );
    });
  });
  // The top-level `cache_control`: Anthropic places it on the last cacheable block itself.
  const automatic = breakpointOf((request as { cache_control?: unknown }).cache_control);
  const last = units.at(-1);
  if (automatic !== undefined && last !== undefined && last.breakpoint === undefined) last.breakpoint = automatic;
  reconcileTokens(units, total);
  return units;
}

/** The request's cache reads and writes: by directive, or from the simulator's cache. */
export function anthropicPromptCache(
  exchange: SimulatorExchange,
  request: AnthropicRequest,
  total: number,
  directives: SimulatorDirectives,
): CacheCounts {
  const store = realCacheFor(exchange, directives);
  if (store === undefined) return directiveCounts(total, directives);
  return breakpointCache(
    store,
    cacheScope('anthropic', exchange, request.model),
    anthropicCacheUnits(request, total),
    total,
    { minimumTokens: minimumCacheableTokens(request.model) },
  );
}
