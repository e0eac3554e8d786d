/**
 * Gemini's implicit caching in the simulator: prompts from the model's minimum up are cached by prefix and a later
 * prompt reads the longest cached prefix it starts with, token for token (`cachedContentTokenCount`). Minimums from
 * Google's caching guide: 2,048 tokens for Gemini 2.5, 4,096 for Gemini 3 and later; older models have no implicit
 * caching. Units: the system instruction, the function declarations, then each content.
 */
import type { SimulatorDirectives } from '../fault-directives.js';
import { cacheScope, directiveCounts, realCacheFor, type CacheCounts } from '../prompt-cache/cache-counts.js';
import { reconcileTokens, unitOf, type CacheUnit } from '../prompt-cache/cache-units.js';
import { prefixCache, type PrefixCachePolicy } from '../prompt-cache/prefix-cache.js';
import type { SimulatorExchange } from '../simulator-exchange.js';
import { countPromptTokens } from './gemini-prompt.js';
import type { GeminiRequest } from './gemini-types.js';

/** Google does not publish how long an implicit cache entry lives; the simulator keeps it 5 minutes after use. */
const LIFETIME_MS = 5 * 60_000;
const MAJOR_VERSION = /^gemini-(\d+)(?:\.(\d+))?/;

/** The model's minimum cacheable prompt, or undefined when it has no implicit caching (before Gemini 2.5). */
export function geminiMinimumTokens(model: string): number | undefined {
  const version = MAJOR_VERSION.exec(model);
  if (version === null) return undefined;
  const major = Number(version[1]);
  const minor = Number(version[2] ?? 0);
  if (major >= 3) return 4_096;
  if (major === 2 && minor >= 5) return 2_048;
  return undefined;
}

export function geminiCacheUnits(request: GeminiRequest, total: number): CacheUnit[] {
  const units: CacheUnit[] = [];
  const system = request.systemInstruction;
  if (system !== undefined) units.push(unitOf('system', system, () => countPromptTokens({ contents: [system] }).total));
  const tools = request.tools ?? [];
  if (tools.some((tool) => (tool.functionDeclarations ?? []).length > 0))
    units.push(unitOf('tools', tools, () => countPromptTokens({ contents: [], tools }).total));
  for (const content of request.contents)
    units.push(unitOf('content', content, () => countPromptTokens({ contents: [content] }).total));
  reconcileTokens(units, total);
  return units;
}

export function geminiPromptCache(
  exchange: SimulatorExchange,
  model: string,
  request: GeminiRequest,
  total: number,
  directives: SimulatorDirectives,
): CacheCounts {
  const store = realCacheFor(exchange, directives);
  const minimumTokens = geminiMinimumTokens(model);
  if (store === undefined || minimumTokens === undefined) return directiveCounts(total, directives);
  const policy: PrefixCachePolicy = { minimumTokens, stepTokens: 1, lifetimeMs: LIFETIME_MS };
  return prefixCache(store, cacheScope('gemini', exchange, model), geminiCacheUnits(request, total), total, policy);
}
