/**
 * Reads the prompt of a validated OpenAI request: the text the reply engine echoes and seeds from, and the
 * prompt token count reported in `usage`, by OpenAI's published recipe (`src/wire/openai-prompt-tokens.ts`).
 * It is close to, not equal to, what OpenAI bills; what matters is that it is exact and reproducible.
 */
import { chatContentText, countChatPromptTokens } from '../../wire/openai-prompt-tokens.js';
import { countPromptWithin, countTokens } from '../reply-engine.js';
import type { ToolOffer, ToolRequirement } from '../turn-planner.js';
import type { OpenAiChatRequest, OpenAiMessage } from './openai-types.js';

/** Text parts of a message content joined with newlines (refusals count as text). */
export function contentText(content: OpenAiMessage['content']): string {
  return chatContentText(content);
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
  return countPromptWithin(() => countChatPromptTokens(request, countTokens));
}

/** What the reply is derived from: the conversation only, so stream and non-stream requests agree. */
export function replySeedText(request: OpenAiChatRequest): string {
  return JSON.stringify(request.messages);
}

/** Texts of the trailing run of `tool` messages, when the conversation ends with tool results. */
export function trailingToolResults(messages: readonly OpenAiMessage[]): string[] | undefined {
  // System (developer) messages after the results are instructions for this turn: the tool turn still ends the talk.
  let end = messages.length;
  while (end > 0 && (messages[end - 1]?.role === 'system' || messages[end - 1]?.role === 'developer')) end--;
  let start = end;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  if (start === end) return undefined;
  return messages.slice(start, end).map((message) => contentText(message.content));
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
      const allowed = choice.allowed_tools.tools.flatMap((tool) =>
        tool.function === undefined ? [] : [tool.function.name],
      );
      return choice.allowed_tools.mode === 'required' ? { kind: 'any', allowed } : { kind: 'auto' };
    }
  }
}

export function stopSequences(stop: OpenAiChatRequest['stop']): string[] {
  if (stop === undefined || stop === null) return [];
  return typeof stop === 'string' ? [stop] : stop;
}
