import { type UrlCitationAnnotation, urlCitationAnnotation } from './openai-encode-annotations.js';
import { responseChoices, type CanonicalResponse, type ChoiceContent } from '../../canonical/accumulate.js';
import type { FinishReason } from '../../canonical/events.js';
import type { OpenAIChatCompletion, OpenAIToolCall } from '../../wire/openai-chat-wire.js';
import { encodeOpenAILogprobs } from '../shared/openai-logprobs.js';
import { encodeOpenAIUsage } from './openai-encode-usage.js';

const FINISH_REASONS: Readonly<Record<FinishReason, string>> = {
  stop: 'stop',
  'stop-sequence': 'stop',
  length: 'length',
  'tool-calls': 'tool_calls',
  'content-filter': 'content_filter',
  pause: 'stop',
  other: 'stop',
};

export function encodeOpenAIFinishReason(reason: FinishReason | null, hasToolCalls: boolean): string {
  if (hasToolCalls && (reason === null || reason === 'stop' || reason === 'tool-calls')) return 'tool_calls';
  return reason === null ? 'stop' : FINISH_REASONS[reason];
}

export interface OpenAIResponseContext {
  /** The id the client sees (the gateway's, stable across vendors). */
  id: string;
  /** The public model id the client asked for. */
  model: string;
}

/** A whole canonical reply as an OpenAI `chat.completion` object, one `choices` entry per choice it holds. */
export function encodeOpenAIResponse(
  response: CanonicalResponse,
  context: OpenAIResponseContext,
  costNano?: bigint,
): OpenAIChatCompletion & { usage: NonNullable<OpenAIChatCompletion['usage']> } {
  return {
    id: context.id,
    object: 'chat.completion',
    created: response.created || Math.floor(Date.now() / 1000),
    model: context.model,
    choices: responseChoices(response).map(encodeChoice),
    usage: encodeOpenAIUsage(response.usage, costNano),
  };
}

function encodeChoice(choice: ChoiceContent, index: number): OpenAIChatCompletion['choices'][number] {
  let text = '';
  let reasoning = '';
  const toolCalls: OpenAIToolCall[] = [];
  const annotations: UrlCitationAnnotation[] = [];
  for (const block of choice.content) {
    if (block.type === 'text') {
      for (const citation of block.citations ?? [])
        if (citation.url !== '') annotations.push(urlCitationAnnotation(citation, block.text, text.length));
      text += block.text;
    } else if (block.type === 'reasoning') reasoning += block.text;
    else if (block.type === 'tool-call')
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: block.argumentsJson },
      });
  }
  const message: OpenAIChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
  };
  // DeepSeek's field name: the de-facto way OpenAI-compatible clients receive reasoning text.
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (annotations.length > 0) message.annotations = annotations;
  return {
    index,
    message,
    logprobs: choice.logprobs === undefined ? null : { content: encodeOpenAILogprobs(choice.logprobs), refusal: null },
    finish_reason: encodeOpenAIFinishReason(choice.finishReason, toolCalls.length > 0),
  };
}
