import { totalInputTokens, type CanonicalUsage } from '../../canonical/usage.js';
import type { OpenAIUsage } from '../../wire/openai-chat-wire.js';
import { costFields, type CostFields } from '../shared/cost-fields.js';

/**
 * Canonical usage in OpenAI's shape: cached tokens inside `prompt_tokens`, so prompt + completion = total.
 * With the request's charge, adds Tollgate's extension fields `cost` (USD, exact decimal string) and
 * `cost_nano_usd`.
 */
export function encodeOpenAIUsage(usage: CanonicalUsage, costNano?: bigint): OpenAIUsage & Partial<CostFields> {
  const prompt = totalInputTokens(usage);
  // Literals with a fixed shape rather than spreads (same keys, same order): this runs for every response.
  const details: { cached_tokens: number; cache_write_tokens?: number } = { cached_tokens: usage.cacheReadTokens };
  if (usage.cacheWriteTokens > 0) details.cache_write_tokens = usage.cacheWriteTokens;
  const completionDetails = { reasoning_tokens: usage.reasoningTokens };
  if (costNano === undefined) {
    return {
      prompt_tokens: prompt,
      completion_tokens: usage.outputTokens,
      total_tokens: prompt + usage.outputTokens,
      prompt_tokens_details: details,
      completion_tokens_details: completionDetails,
    };
  }
  const cost = costFields(costNano);
  return {
    cost: cost.cost,
    cost_nano_usd: cost.cost_nano_usd,
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: details,
    completion_tokens_details: completionDetails,
  };
}
