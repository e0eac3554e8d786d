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
  return {
    ...(costNano === undefined ? {} : costFields(costNano)),
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cacheReadTokens,
      ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}
