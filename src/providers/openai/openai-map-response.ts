import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import type { OpenAIChatCompletion, OpenAIUsage } from '../../wire/openai-chat-wire.js';

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  content_filter: 'content-filter',
  // DeepSeek: output was cut short by the server.
  insufficient_system_resource: 'length',
};

export function mapOpenAIFinishReason(reason: string | null | undefined): FinishReason {
  if (reason === null || reason === undefined) return 'stop';
  return FINISH_REASONS[reason] ?? 'other';
}

/**
 * OpenAI usage → canonical usage. OpenAI counts cached tokens inside `prompt_tokens`; canonical input excludes
 * them. DeepSeek reports the split itself as `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`, which it
 * bills by, so those win over its undocumented `prompt_tokens_details.cached_tokens`
 * (docs/protocols/translation.md#usage).
 */
export function mapOpenAIUsage(usage: OpenAIUsage): CanonicalUsage {
  const cacheRead = usage.prompt_cache_hit_tokens ?? usage.prompt_tokens_details?.cached_tokens ?? 0;
  const cacheWrite = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    inputTokens: usage.prompt_cache_miss_tokens ?? Math.max(0, (usage.prompt_tokens ?? 0) - cacheRead - cacheWrite),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    // OpenAI-format vendors report no lifetime for a write (OpenAI bills writes as input).
    cacheWrite1hTokens: 0,
    outputTokens: usage.completion_tokens ?? 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    raw: usage,
  };
}

/** A whole chat.completion as the canonical event sequence a stream of it would have produced. */
export function mapOpenAIResponse(completion: OpenAIChatCompletion): CanonicalEvent[] {
  const events: CanonicalEvent[] = [
    { type: 'response-start', id: completion.id, model: completion.model, created: completion.created },
  ];
  const choice = completion.choices[0];
  const message = choice?.message;
  if (message?.reasoning_content) {
    events.push(
      { type: 'reasoning-start', blockId: 'reasoning' },
      { type: 'reasoning-delta', blockId: 'reasoning', text: message.reasoning_content },
      { type: 'reasoning-end', blockId: 'reasoning' },
    );
  }
  const text = message?.content ?? message?.refusal ?? '';
  if (text !== '') {
    events.push(
      { type: 'text-start', blockId: 'text' },
      { type: 'text-delta', blockId: 'text', text },
      { type: 'text-end', blockId: 'text' },
    );
  }
  message?.tool_calls?.forEach((call, index) => {
    const blockId = `tool-${index}`;
    events.push({ type: 'tool-call-start', blockId, id: call.id, name: call.function.name });
    if (call.function.arguments)
      events.push({ type: 'tool-call-delta', blockId, argumentsDelta: call.function.arguments });
    events.push({ type: 'tool-call-end', blockId });
  });
  events.push({
    type: 'finish',
    reason: mapOpenAIFinishReason(choice?.finish_reason),
    rawReason: choice?.finish_reason ?? null,
  });
  if (completion.usage) events.push({ type: 'usage', usage: mapOpenAIUsage(completion.usage) });
  return events;
}
