/**
 * Automatic prompt caching for the two Chat Completions vendors. OpenAI caches prompts of 1,024 tokens and more and
 * reports hits from 1,024 in steps of 128; a `prompt_cache_key` joins the prefix in naming an entry, so requests with
 * different keys never share one; `prompt_cache_retention: "24h"` keeps entries a day instead of minutes. DeepSeek
 * caches on disk in units of 64 tokens. Units: the tool definitions, then each message, in the order the model reads.
 */
import type { SimulatorDirectives } from '../fault-directives.js';
import { cacheScope, directiveCounts, realCacheFor, type CacheCounts } from '../prompt-cache/cache-counts.js';
import { reconcileTokens, unitOf, type CacheUnit } from '../prompt-cache/cache-units.js';
import { prefixCache, type PrefixCachePolicy } from '../prompt-cache/prefix-cache.js';
import { countPromptWithin, countTokens } from '../reply-engine.js';
import type { SimulatorExchange } from '../simulator-exchange.js';
import { countPromptTokens } from './openai-prompt.js';
import type { OpenAiChatRequest } from './openai-types.js';

const MINUTE_MS = 60_000;
/** Tokens the recipe adds once per prompt, priming the reply: they belong to no message. */
const TOKENS_REPLY_PRIMING = 3;

/** In-memory retention: OpenAI keeps a prefix 5 to 10 minutes after its last use; the simulator takes 10. */
export const OPENAI_CACHE: PrefixCachePolicy = { minimumTokens: 1_024, stepTokens: 128, lifetimeMs: 10 * MINUTE_MS };
const OPENAI_EXTENDED_LIFETIME_MS = 24 * 60 * MINUTE_MS;
/** DeepSeek clears unused disk cache within hours; the simulator keeps it one hour. */
export const DEEPSEEK_CACHE: PrefixCachePolicy = { minimumTokens: 64, stepTokens: 64, lifetimeMs: 60 * MINUTE_MS };

export function chatCacheUnits(request: OpenAiChatRequest, total: number): CacheUnit[] {
  const units: CacheUnit[] = [];
  const tools = request.tools ?? [];
  if (tools.length > 0)
    units.push(unitOf('tools', tools, () => countPromptWithin(() => countTokens(JSON.stringify(tools)))));
  for (const message of request.messages) {
    units.push(
      unitOf('message', message, () => countPromptTokens({ model: '', messages: [message] }) - TOKENS_REPLY_PRIMING),
    );
  }
  // The priming tokens come after the last message: never part of a cached prefix.
  reconcileTokens(units, Math.max(0, total - TOKENS_REPLY_PRIMING));
  return units;
}

function stringField(request: OpenAiChatRequest, name: string): string | undefined {
  const value = (request as unknown as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

export function openAiPromptCache(
  exchange: SimulatorExchange,
  request: OpenAiChatRequest,
  total: number,
  directives: SimulatorDirectives,
): CacheCounts {
  const store = realCacheFor(exchange, directives);
  if (store === undefined) return directiveCounts(total, directives);
  const routingKey = stringField(request, 'prompt_cache_key') ?? '';
  const policy =
    stringField(request, 'prompt_cache_retention') === '24h'
      ? { ...OPENAI_CACHE, lifetimeMs: OPENAI_EXTENDED_LIFETIME_MS }
      : OPENAI_CACHE;
  const scope = cacheScope('openai', exchange, request.model, routingKey);
  return prefixCache(store, scope, chatCacheUnits(request, total), total, policy);
}

export function deepSeekPromptCache(
  exchange: SimulatorExchange,
  request: OpenAiChatRequest,
  total: number,
  directives: SimulatorDirectives,
): CacheCounts {
  const store = realCacheFor(exchange, directives);
  if (store === undefined) return directiveCounts(total, directives);
  const scope = cacheScope('deepseek', exchange, request.model);
  return prefixCache(store, scope, chatCacheUnits(request, total), total, DEEPSEEK_CACHE);
}
