import type { CanonicalRequest } from '../../canonical/request.js';

/**
 * Canonical reasoning parameters → an Anthropic thinking budget, and the `max_tokens` that goes with it.
 * Anthropic requires `max_tokens` and counts thinking inside it, so both are decided together.
 */

/**
 * LiteLLM's buckets for OpenAI's `reasoning_effort` (docs/protocols/translation.md#reasoning); Anthropic's floor is
 * 1024.
 */
const EFFORT_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192,
  max: 16384,
};

/**
 * `max_tokens` when the client gave none. Anthropic has no default, and the model's own maximum (32k–64k) would
 * make every reply reserve that much balance and invite very long answers: 8192 covers ordinary replies.
 */
export const DEFAULT_MAX_TOKENS = 8192;

/** Room left for the answer when `max_tokens` has to be raised above a thinking budget. */
export const ANSWER_ALLOWANCE_TOKENS = 4096;

export type ThinkingIntent =
  /** The client asked for nothing: no `thinking` field is sent. */
  | { kind: 'unspecified' }
  /** The client turned reasoning off explicitly: `{type: "disabled"}`. */
  | { kind: 'disabled' }
  | { kind: 'enabled'; budgetTokens: number }
  /** Anthropic's own modes without a budget: `adaptive` (the model decides) and `between_tools`. */
  | { kind: 'adaptive' }
  | { kind: 'between-tools' }
  /** An effort value Anthropic has no bucket for: thinking is left off and the parameter reported. */
  | { kind: 'unsupported' };

export function thinkingIntent(request: CanonicalRequest): ThinkingIntent {
  const reasoning = request.reasoning;
  if (reasoning === undefined) return { kind: 'unspecified' };
  if (reasoning.enabled === false) return { kind: 'disabled' };
  if (reasoning.budgetTokens !== undefined) return { kind: 'enabled', budgetTokens: reasoning.budgetTokens };
  if (reasoning.mode === 'adaptive') return { kind: 'adaptive' };
  if (reasoning.mode === 'between-tools') return { kind: 'between-tools' };
  // An Anthropic client's effort is `output_config.effort`, sent as such: it does not turn thinking on.
  if (request.extensionsProtocol === 'anthropic-messages')
    return reasoning.enabled === true ? { kind: 'adaptive' } : { kind: 'unspecified' };
  if (reasoning.effort === undefined)
    return reasoning.enabled === true
      ? { kind: 'enabled', budgetTokens: EFFORT_BUDGETS.medium! }
      : { kind: 'unspecified' };
  if (reasoning.effort === 'none') return { kind: 'disabled' };
  const budget = EFFORT_BUDGETS[reasoning.effort];
  return budget === undefined ? { kind: 'unsupported' } : { kind: 'enabled', budgetTokens: budget };
}

/** The name the client knows its reasoning parameter by, for `droppedParameters`. */
export function reasoningParameterName(request: CanonicalRequest): string {
  return request.extensionsProtocol === 'openai-chat' && request.reasoning?.effort !== undefined
    ? 'reasoning_effort'
    : 'thinking';
}

export interface TokenLimits {
  maxTokens: number;
  /** The thinking budget actually sent, always below `maxTokens`; undefined when thinking is off. */
  budgetTokens: number | undefined;
}

/**
 * `max_tokens` = the client's value, or min(model maximum, DEFAULT_MAX_TOKENS), never above the model maximum.
 * With thinking, `max_tokens` must exceed the budget: it is raised to budget + ANSWER_ALLOWANCE_TOKENS when it
 * does not, and if the model maximum forbids that, the budget is lowered instead.
 */
export function tokenLimits(
  requested: number | undefined,
  modelMaxOutputTokens: number,
  budgetTokens: number | undefined,
): TokenLimits {
  let maxTokens = Math.min(requested ?? Math.min(modelMaxOutputTokens, DEFAULT_MAX_TOKENS), modelMaxOutputTokens);
  if (budgetTokens === undefined) return { maxTokens, budgetTokens: undefined };
  let budget = budgetTokens;
  if (maxTokens <= budget) maxTokens = Math.min(budget + ANSWER_ALLOWANCE_TOKENS, modelMaxOutputTokens);
  if (maxTokens <= budget) budget = Math.max(1, maxTokens - ANSWER_ALLOWANCE_TOKENS, Math.floor(maxTokens / 2));
  return { maxTokens, budgetTokens: budget };
}
