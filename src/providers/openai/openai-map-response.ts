import type { CanonicalEvent, FinishReason } from '../../canonical/events.js';
import type { CanonicalUsage } from '../../canonical/usage.js';
import type { OpenAIChatCompletion, OpenAIUsage } from '../../wire/openai-chat-wire.js';
import { mapOpenAILogprobs } from './openai-logprobs.js';
import { annotationCitations, ONE_SEARCH, webSearchEvents } from './openai-web-search.js';

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

/**
 * A whole chat.completion as the canonical event sequence a stream of it would have produced: every choice in turn
 * (a request with `n` has several), its blocks named by choice so they never mix. `webSearchQuery` is set when the
 * request searched the web: annotations become citations, the search is shown and billed.
 */
export function mapOpenAIResponse(completion: OpenAIChatCompletion, webSearchQuery?: string): CanonicalEvent[] {
  const events: CanonicalEvent[] = [
    { type: 'response-start', id: completion.id, model: completion.model, created: completion.created },
  ];
  const search =
    webSearchQuery === undefined ? undefined : { query: webSearchQuery, callId: `srvtoolu_${completion.id}` };
  const choices = completion.choices.length === 0 ? [undefined] : completion.choices;
  for (const [position, choice] of choices.entries()) mapChoice(choice, choice?.index ?? position, events, search);
  if (completion.usage) {
    const usage = mapOpenAIUsage(completion.usage);
    if (search !== undefined) usage.serverToolUse = { ...ONE_SEARCH };
    events.push({ type: 'usage', usage });
  }
  return events;
}

type OpenAIChoice = OpenAIChatCompletion['choices'][number];

function mapChoice(
  choice: OpenAIChoice | undefined,
  index: number,
  events: CanonicalEvent[],
  search: { query: string; callId: string } | undefined,
): void {
  const prefix = choiceBlockPrefix(index);
  const tag = index === 0 ? {} : { choice: index };
  const message = choice?.message;
  if (message?.reasoning_content) {
    const blockId = `${prefix}reasoning`;
    events.push(
      { type: 'reasoning-start', blockId, ...tag },
      { type: 'reasoning-delta', blockId, text: message.reasoning_content },
      { type: 'reasoning-end', blockId },
    );
  }
  const text = message?.content ?? message?.refusal ?? '';
  const citations = search === undefined ? [] : annotationCitations(message?.annotations ?? [], text);
  if (text !== '') {
    const blockId = `${prefix}text`;
    const logprobs = mapOpenAILogprobs(choice?.logprobs);
    events.push(
      { type: 'text-start', blockId, ...tag },
      logprobs === undefined ? { type: 'text-delta', blockId, text } : { type: 'text-delta', blockId, text, logprobs },
      ...citations.map((citation): CanonicalEvent => ({ type: 'text-citation', blockId, citation })),
      { type: 'text-end', blockId },
    );
  }
  if (search !== undefined && index === 0) events.push(...webSearchEvents(search.query, citations, search.callId));
  message?.tool_calls?.forEach((call, callIndex) => {
    const blockId = `${prefix}tool-${callIndex}`;
    events.push({ type: 'tool-call-start', blockId, id: call.id, name: call.function.name, ...tag });
    if (call.function.arguments)
      events.push({ type: 'tool-call-delta', blockId, argumentsDelta: call.function.arguments });
    events.push({ type: 'tool-call-end', blockId });
  });
  events.push({
    type: 'finish',
    reason: mapOpenAIFinishReason(choice?.finish_reason),
    rawReason: choice?.finish_reason ?? null,
    ...tag,
  });
}

/** Block ids of the first choice are unprefixed (as with one choice); the others' carry their index. */
export function choiceBlockPrefix(index: number): string {
  return index === 0 ? '' : `c${index}-`;
}
