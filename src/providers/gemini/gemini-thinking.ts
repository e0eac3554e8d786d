import type { ReasoningParameters } from '../../canonical/request.js';
import type { GeminiThinkingConfig, GeminiThinkingLevel } from '../../wire/gemini-generate-wire.js';

/**
 * Canonical reasoning parameters → `generationConfig.thinkingConfig` (docs/protocols/translation.md#reasoning,
 * docs/protocols/wire-gemini.md#generation-config).
 *
 * - Gemini 2.5 takes a token budget, Gemini 3 and later a level; the generation is read from the upstream
 *   model id (`gemini-2.5-pro`, `gemini-3.5-flash`). An id that names no generation is treated as 2.5.
 * - `effort` → budget with the same buckets (minimal 128, low 1024, medium 2048, high 4096, xhigh 16384,
 *   max = the model's ceiling) on 2.5; → level on 3+ (Pro models only have LOW and HIGH, so minimal→LOW and
 *   medium→HIGH there).
 * - `budgetTokens` (Anthropic's exact number) → `thinkingBudget` on every generation (Gemini 3 still accepts
 *   budgets), clamped to the model's range. It wins over `effort` when both are given.
 * - Off (`enabled: false`, effort `none`, budget 0) → budget 0 where the model allows it; 2.5 Pro cannot stop
 *   thinking (minimum 128) and Gemini 3 has no off switch (lowest level), so those get their minimum.
 * - `includeThoughts: true` whenever reasoning is requested and not off, so the client sees reasoning text;
 *   nothing at all when the client said nothing about reasoning (the model's default applies).
 */

export interface GeminiModelTraits {
  /** Major version: 2 for gemini-2.5-*, 3 for gemini-3.x-*. */
  generation: number;
  pro: boolean;
  lite: boolean;
}

export function geminiModelTraits(upstreamModel: string): GeminiModelTraits {
  const match = /gemini-(\d+)/.exec(upstreamModel);
  return {
    generation: match === null ? 2 : Number(match[1]),
    pro: /-pro\b/.test(upstreamModel),
    lite: /-lite\b/.test(upstreamModel),
  };
}

const EFFORT_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 128,
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 16_384,
  max: Number.POSITIVE_INFINITY,
};

const EFFORT_LEVELS: Readonly<Record<string, GeminiThinkingLevel>> = {
  minimal: 'MINIMAL',
  low: 'LOW',
  medium: 'MEDIUM',
  high: 'HIGH',
  xhigh: 'HIGH',
  max: 'HIGH',
};

export function buildThinkingConfig(
  reasoning: ReasoningParameters | undefined,
  upstreamModel: string,
): GeminiThinkingConfig | undefined {
  if (reasoning === undefined) return undefined;
  const { enabled, effort, budgetTokens } = reasoning;
  if (enabled === undefined && effort === undefined && budgetTokens === undefined) return undefined;
  const traits = geminiModelTraits(upstreamModel);
  const levels = traits.generation >= 3;
  if (enabled === false || effort === 'none' || budgetTokens === 0) {
    return levels ? { thinkingLevel: lowestLevel(traits) } : { thinkingBudget: budgetRange(traits).off };
  }
  if (budgetTokens !== undefined) return { includeThoughts: true, thinkingBudget: clampBudget(budgetTokens, traits) };
  if (effort !== undefined) {
    if (levels) {
      const level = EFFORT_LEVELS[effort];
      if (level !== undefined) return { includeThoughts: true, thinkingLevel: proLevel(level, traits) };
    } else {
      const budget = EFFORT_BUDGETS[effort];
      if (budget !== undefined) return { includeThoughts: true, thinkingBudget: clampBudget(budget, traits) };
    }
  }
  // Reasoning asked for without a size: the model's own (dynamic) amount, with its text visible.
  return { includeThoughts: true };
}

/** Documented budget ranges of the 2.5 models; the same bounds are assumed for later generations. */
function budgetRange(traits: GeminiModelTraits): { off: number; min: number; max: number } {
  if (traits.pro) return { off: 128, min: 128, max: 32_768 };
  if (traits.lite) return { off: 0, min: 512, max: 24_576 };
  return { off: 0, min: 1, max: 24_576 };
}

function clampBudget(budget: number, traits: GeminiModelTraits): number {
  const { min, max } = budgetRange(traits);
  return Math.min(max, Math.max(min, Math.round(budget)));
}

function lowestLevel(traits: GeminiModelTraits): GeminiThinkingLevel {
  return traits.pro ? 'LOW' : 'MINIMAL';
}

/** Gemini 3 Pro knows only LOW and HIGH. */
function proLevel(level: GeminiThinkingLevel, traits: GeminiModelTraits): GeminiThinkingLevel {
  if (!traits.pro) return level;
  return level === 'MINIMAL' || level === 'LOW' ? 'LOW' : 'HIGH';
}
