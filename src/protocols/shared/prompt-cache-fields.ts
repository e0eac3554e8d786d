import { z } from 'zod';
import type { CanonicalRequest } from '../../canonical/request.js';

/** OpenAI refuses longer keys (400 `string_above_max_length`); refused here first, naming the field. */
export const MAX_PROMPT_CACHE_KEY_LENGTH = 64;

/**
 * OpenAI's prompt-cache fields, as the chat-completions and Responses APIs take them (the `openai` SDK's
 * `prompt_cache_key?: string | null` and `prompt_cache_retention?: 'in_memory' | '24h' | null`).
 */
export const promptCacheKeySchema = z
  .string()
  .max(MAX_PROMPT_CACHE_KEY_LENGTH, `must be at most ${MAX_PROMPT_CACHE_KEY_LENGTH} characters`)
  .nullish();
export const promptCacheRetentionSchema = z.enum(['in_memory', '24h']).nullish();

/** The two fields onto the canonical request (null and the empty key count as unset). */
export function decodePromptCacheFields(
  input: { prompt_cache_key?: string | null | undefined; prompt_cache_retention?: string | null | undefined },
  request: CanonicalRequest,
): void {
  if (input.prompt_cache_key != null && input.prompt_cache_key !== '') request.promptCacheKey = input.prompt_cache_key;
  if (input.prompt_cache_retention != null) request.promptCacheRetention = input.prompt_cache_retention;
}
