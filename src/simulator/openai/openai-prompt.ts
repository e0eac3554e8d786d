/**
 * Reads the prompt of a validated OpenAI request: the text the reply engine echoes and seeds from, and the
 * prompt token count reported in `usage`.
 *
 * Prompt tokens follow OpenAI's published counting recipe for chat models (the openai-cookbook "How to
 * count tokens" notebook), with the o200k tokenizer:
 *   3 tokens per message + tokens of its role + tokens of its text + (1 + tokens of `name` when present)
 *   + tokens of each tool call's name and arguments + 85 per non-text part (the low-detail image base cost)
 *   + tokens of the JSON of the `tools` definitions + 3 tokens priming the reply.
 * It is close to, not equal to, what OpenAI bills; what matters is that it is exact and reproducible.
 */
import { countTokens } from '../reply-engine.js';
import type { ToolOffer, ToolRequirement } from '../turn-planner.js';
import type { OpenAiChatRequest, OpenAiMessage } from './openai-types.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const TOKENS_REPLY_PRIMING = 3;
const TOKENS_PER_MEDIA_PART = 85;

/** Text parts of a message content joined with newlines (refusals count as text). */
export function contentText(content: OpenAiMessage['content']): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of content) {
    if (part.type === 'text' && part.text !== undefined) texts.push(part.text);
    else if (part.type === 'refusal' && part.refusal !== undefined) texts.push(part.refusal);
  }
  return texts.join('\n');
}

function mediaParts(content: OpenAiMessage['content']): number {
  if (!Array.isArray(content)) return 0;
  return content.filter((part) => part.type !== 'text' && part.type !== 'refusal').length;
}

/** The last user message's text: what the reply echoes and where directives are read. */
export function lastUserText(messages: readonly OpenAiMessage[]): string {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role === 'user') return contentText(message.content);
  }
  return '';
}

export function countPromptTokens(request: OpenAiChatRequest): number {
  let total = TOKENS_REPLY_PRIMING;
  for (const message of request.messages) {
    total += TOKENS_PER_MESSAGE + countTokens(message.role) + countTokens(contentText(message.content));
    total += TOKENS_PER_MEDIA_PART * mediaParts(message.content);
    if (message.name !== undefined) total += TOKENS_PER_NAME + countTokens(message.name);
    for (const call of message.tool_calls ?? []) {
      const body = call.function ?? { name: call.custom?.name ?? '', arguments: call.custom?.input ?? '' };
      total += countTokens(body.name) + countTokens(body.arguments);
    }
  }
  if (request.tools !== undefined && request.tools !== null && request.tools.length > 0) total += countTokens(JSON.stringify(request.tools));
  return total;
}

/** What the reply is derived from: the conversation only, so stream and non-stream requests agree. */
export function replySeedText(request: OpenAiChatRequest): string {
  return JSON.stringify(request.messages);
}

/** Texts of the trailing run of `tool` messages, when the conversation ends with tool results. */
export function trailingToolResults(messages: readonly OpenAiMessage[]): string[] | undefined {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  if (start === messages.length) return undefined;
  return messages.slice(start).map((message) => contentText(message.content));
}

/** The function tools the model may call (custom tools are never called by the simulator). */
export function toolOffers(request: OpenAiChatRequest): ToolOffer[] {
  const offers: ToolOffer[] = [];
  for (const tool of request.tools ?? []) {
    if (tool.type === 'function') offers.push({ name: tool.function.name, parameters: tool.function.parameters });
  }
  return offers;
}

export function toolRequirement(request: OpenAiChatRequest): ToolRequirement {
  const choice = request.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto') return { kind: 'auto' };
  if (choice === 'none') return { kind: 'none' };
  if (choice === 'required') return { kind: 'any' };
  switch (choice.type) {
    case 'function':
      return { kind: 'named', name: choice.function.name };
    case 'custom':
      return { kind: 'auto' }; // the simulator never calls custom tools
    case 'allowed_tools': {
      const allowed = choice.allowed_tools.tools.flatMap((tool) => (tool.function === undefined ? [] : [tool.function.name]));
      return choice.allowed_tools.mode === 'required' ? { kind: 'any', allowed } : { kind: 'auto' };
    }
  }
}

export function stopSequences(stop: OpenAiChatRequest['stop']): string[] {
  if (stop === undefined || stop === null) return [];
  return typeof stop === 'string' ? [stop] : stop;
}
