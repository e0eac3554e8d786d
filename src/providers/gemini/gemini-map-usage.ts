import type { CanonicalUsage } from '../../canonical/usage.js';
import type { GeminiUsageMetadata } from '../../wire/gemini-generate-wire.js';

/**
 * Gemini `usageMetadata` → canonical usage (docs/protocols/translation.md#usage). Gemini counts cached tokens inside
 * `promptTokenCount` (canonical input excludes them) and thoughts beside `candidatesTokenCount` (canonical
 * output includes them: docs/protocols/translation.md#gemini-thoughts-count-as-output). Results of server-side tools
 * (`toolUsePromptTokenCount`) are billed as input and are part of `totalTokenCount`, so they count as input here; the
 * gateway never enables such tools, so it is 0 in practice. Gemini has no cache writes to report.
 */
export function mapGeminiUsage(usage: GeminiUsageMetadata): CanonicalUsage {
  const cached = usage.cachedContentTokenCount ?? 0;
  const thoughts = usage.thoughtsTokenCount ?? 0;
  return {
    inputTokens: Math.max(0, (usage.promptTokenCount ?? 0) - cached) + (usage.toolUsePromptTokenCount ?? 0),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    outputTokens: (usage.candidatesTokenCount ?? 0) + thoughts,
    reasoningTokens: thoughts,
    raw: usage,
  };
}
