import type { CanonicalRequest } from '../canonical/request.js';

/**
 * OpenAI's prompt-cache fields as the client sent them, for a vendor that has neither (Anthropic, Gemini and
 * DeepSeek cache by prefix on their own): they are left out and named in `x-tollgate-dropped-params`. A key the
 * gateway derived itself is never on the request, so it is never reported.
 */
export function unsupportedPromptCacheFields(request: CanonicalRequest): string[] {
  const fields: string[] = [];
  if (request.promptCacheKey !== undefined) fields.push('prompt_cache_key');
  if (request.promptCacheRetention !== undefined) fields.push('prompt_cache_retention');
  return fields;
}
