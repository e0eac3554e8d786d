import { contextWindowExceeded } from '../canonical/context-window.js';
import { estimateRequestInputTokens, loadTokenizer, upperBoundRequestInputTokens } from '../canonical/count-tokens.js';
import { GatewayError } from '../canonical/errors.js';
import { choiceCount, type CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';

/** Anthropic's smallest thinking budget: a request that cannot give thinking this much is served without it. */
export const MIN_THINKING_BUDGET_TOKENS = 1024;

/** Room kept for the answer when a thinking budget is lowered to fit under `max_tokens`. */
const ANSWER_ROOM_TOKENS = 4096;

/**
 * A client that does not know the model behind an id may ask for more output than it allows (Claude Code sends
 * 32000; delta-v4-flash allows 8192): the request is served with the model's limit instead of refused, and admission
 * sizes the hold on that limit. Returns the limit applied, or undefined when nothing was clamped.
 */
export function clampOutputLimit(request: CanonicalRequest, model: CatalogModel): number | undefined {
  if (request.maxOutputTokens === undefined || request.maxOutputTokens <= model.maxOutputTokens) return undefined;
  request.maxOutputTokens = model.maxOutputTokens;
  return model.maxOutputTokens;
}

/**
 * The Anthropic protocol counts thinking inside `max_tokens` and requires the budget below it. Clients send budgets
 * that are not (Qwen Code: `max_tokens` 32000 with `budget_tokens` 32000), and the output clamp can push
 * `max_tokens` under a budget that was fine: the budget is lowered to leave the answer room (4096 tokens, or half
 * the limit when that is less), never under Anthropic's 1024. A limit of 1024 or less leaves no room for any budget:
 * thinking is turned off. Runs after `clampOutputLimit`, on every family, so each vendor's reasoning setting is
 * derived from the budget actually served. Returns that budget (0: thinking off), or undefined when nothing changed.
 */
export function clampThinkingBudget(request: CanonicalRequest): number | undefined {
  const reasoning = request.reasoning;
  const budget = reasoning?.budgetTokens;
  const limit = request.maxOutputTokens;
  if (request.extensionsProtocol !== 'anthropic-messages' || reasoning === undefined) return undefined;
  if (budget === undefined || limit === undefined || budget < limit) return undefined;
  const { budgetTokens: _unserved, ...rest } = reasoning;
  if (limit <= MIN_THINKING_BUDGET_TOKENS) {
    request.reasoning = { ...rest, enabled: false };
    return 0;
  }
  const lowered = Math.max(MIN_THINKING_BUDGET_TOKENS, limit - ANSWER_ROOM_TOKENS, Math.floor(limit / 2));
  request.reasoning = { ...rest, budgetTokens: lowered };
  return lowered;
}

/**
 * Refuses a prompt longer than the model's context window before anything is held or sent, as its vendor would
 * (the protocols word it as their vendor does, so agents compact). The window may be the operator's, lower than the
 * vendor's. The tokenizer runs only when a UTF-8 upper bound of the prompt passes the window; its count is returned
 * then, for admission to reuse, else undefined.
 */
export async function assertPromptFitsWindow(
  request: CanonicalRequest,
  model: CatalogModel,
): Promise<number | undefined> {
  if (upperBoundRequestInputTokens(request) <= model.contextWindow) return undefined;
  await loadTokenizer();
  const promptTokens = estimateRequestInputTokens(request);
  if (promptTokens > model.contextWindow) throw contextWindowExceeded(promptTokens, model.contextWindow);
  return promptTokens;
}

/**
 * A vendor's refusal of a prompt over its window, with the counts it did not name (OpenAI's Responses wording names
 * none) filled in from the tokenizer and the catalog, so every protocol can word it. Any other error is returned as is.
 */
export async function withOverflowCounts(
  error: unknown,
  request: CanonicalRequest,
  model: CatalogModel,
): Promise<unknown> {
  if (!(error instanceof GatewayError) || error.code !== 'context_length_exceeded') return error;
  const told = error.contextOverflow ?? {};
  if (told.promptTokens !== undefined && told.contextWindow !== undefined) return error;
  await loadTokenizer();
  return new GatewayError(error.code, error.message, {
    ...(error.upstreamCode === undefined ? {} : { upstreamCode: error.upstreamCode }),
    contextOverflow: {
      promptTokens: told.promptTokens ?? estimateRequestInputTokens(request),
      contextWindow: told.contextWindow ?? model.contextWindow,
    },
    cause: error,
  });
}

/** The most output a request may have in all: its limit (the client's or the model's) for each choice it asked for. */
export function requestOutputLimit(request: CanonicalRequest, model: CatalogModel): number {
  return (request.maxOutputTokens ?? model.maxOutputTokens) * choiceCount(request);
}
