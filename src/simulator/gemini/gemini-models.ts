/**
 * Which Gemini models think, and the thinking settings each accepts (docs/protocols/wire-gemini.md#generation-config):
 * Gemini 3 thinks always and takes `thinkingLevel`; Gemini 2.5 takes `thinkingBudget` (Pro cannot turn thinking off)
 * and thinks when the budget is positive or -1 (dynamic); older models do not think at all.
 */
import { GeminiInvalid } from './gemini-request-shape.js';
import type { GeminiThinking, GeminiThinkingConfig } from './gemini-types.js';

const LEVEL_SCALE: Record<string, number> = { MINIMAL: 0.25, LOW: 0.5, MEDIUM: 1, HIGH: 1.5 };
/** Budget ranges of the 2.5 models (besides 0 where allowed, and -1 for dynamic). */
const PRO_BUDGET = { min: 128, max: 32_768 };
const FLASH_BUDGET = { min: 1, max: 24_576 };

export function isGemini3(model: string): boolean {
  return model.startsWith('gemini-3');
}

function fail(message: string): never {
  throw new GeminiInvalid(message);
}

/** Checks `thinkingConfig` against the model; returns how the model thinks for this request. */
export function thinkingFor(model: string, config: GeminiThinkingConfig | undefined): GeminiThinking {
  const budget = config?.thinkingBudget;
  const level = config?.thinkingLevel;
  const includeThoughts = config?.includeThoughts === true;
  if (budget !== undefined && level !== undefined)
    fail('You can only set only one of thinking budget and thinking level.');
  if (isGemini3(model)) {
    return { active: true, includeThoughts, scale: level === undefined ? 1 : (LEVEL_SCALE[level] ?? 1) };
  }
  if (model.startsWith('gemini-2.5')) {
    if (level !== undefined) fail(`Thinking level is not supported for models/${model}. Use thinking_budget instead.`);
    if (budget === undefined || budget === -1)
      return { active: budget === -1, includeThoughts: includeThoughts && budget === -1, scale: 1 };
    const pro = model.startsWith('gemini-2.5-pro');
    if (budget === 0) {
      if (pro) fail('Budget 0 is invalid. This model only works in thinking mode.');
      return { active: false, includeThoughts: false, scale: 1 };
    }
    const range = pro ? PRO_BUDGET : FLASH_BUDGET;
    if (budget < range.min || budget > range.max)
      fail(`The thinking budget ${budget} is invalid. Please choose a value between ${range.min} and ${range.max}.`);
    return { active: true, includeThoughts, scale: 1 };
  }
  if (config !== undefined && (includeThoughts || (budget !== undefined && budget !== 0) || level !== undefined)) {
    fail(`Thinking is not supported by models/${model}.`);
  }
  return { active: false, includeThoughts: false, scale: 1 };
}
