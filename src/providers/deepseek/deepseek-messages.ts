import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalMessage, CanonicalRequest, ContentBlock } from '../../canonical/request.js';
import type { OpenAIMessage, OpenAIToolCall } from '../../wire/openai-chat-wire.js';
import { buildOpenAIMessage } from '../openai/openai-build-request.js';

/** A message as sent to DeepSeek: text content is always one string (null only on an assistant tool-call turn). */
export type DeepSeekMessage =
  | { role: 'system' | 'user'; content: string; name?: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: OpenAIToolCall[];
      reasoning_content?: string;
      name?: string;
    }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface DeepSeekMessageOptions {
  /** The public model id, for error messages. */
  publicModel: string;
  /** The request runs in thinking mode: tool-call turns must then carry their `reasoning_content`. */
  thinking: boolean;
  /** Extra system text appended after the client's system prompt (e.g. the JSON schema instruction). */
  extraSystem?: string;
}

/**
 * Canonical conversation → DeepSeek messages. Built from the OpenAI message builder (same wire dialect), then:
 *
 * - text parts are flattened into one string per message, joined by "\n": array content has been rejected by
 *   DeepSeek (docs/protocols/wire-deepseek.md#request); images and documents are refused with a 400, since DeepSeek's
 *   chat models are text-only;
 * - reasoning is replayed as `reasoning_content` on every assistant **tool-call** turn when the request thinks
 *   (docs/protocols/translation.md#deepseek-reasoning-in-tool-loops): DeepSeek's thinking mode answers 400 when a
 *   tool-call turn of the history lacks it, and since V4 that holds for the whole history, not only after the latest
 *   user message. A tool-call turn with no reasoning (an OpenAI client that did not echo it) gets `""`, which satisfies
 *   the check. DeepSeek has no signatures, so any vendor's reasoning text may be replayed. Plain answer turns never
 *   carry it: DeepSeek ignores it there, and the first `deepseek-reasoner` answered 400. Reasoning never becomes
 *   `content`;
 * - runs of same-role messages are merged (docs/protocols/translation.md#deepseek-same-role-runs): `deepseek-reasoner`
 *   rejects successive user or assistant messages, and merging is harmless for every model, so it is always done. Tool
 *   messages are never merged (each answers its own call).
 */
export function buildDeepSeekMessages(request: CanonicalRequest, options: DeepSeekMessageOptions): DeepSeekMessage[] {
  rejectNonTextContent(request.messages, options.publicModel);
  const messages: DeepSeekMessage[] = [];
  if (request.system.length > 0) messages.push({ role: 'system', content: joinText(request.system) });
  if (options.extraSystem !== undefined) messages.push({ role: 'system', content: options.extraSystem });
  request.messages.forEach((message, index) => {
    for (const built of buildOpenAIMessage(message, index))
      messages.push(toDeepSeekMessage(built, message, options.thinking));
  });
  return mergeSameRole(messages).map(withAssistantContent);
}

/** The first image or document in the conversation, as the 400 a client should see. */
function rejectNonTextContent(messages: readonly CanonicalMessage[], publicModel: string): void {
  messages.forEach((message, index) => {
    for (const block of message.content) {
      const kind = nonTextKind(block);
      if (kind !== undefined) {
        throw new GatewayError(
          'unsupported_parameter',
          `The model '${publicModel}' does not accept ${kind} (messages[${index}] contains one).`,
          {
            param: `messages[${index}].content`,
          },
        );
      }
    }
  });
}

function nonTextKind(block: ContentBlock): 'images' | 'documents' | undefined {
  if (block.type === 'image') return 'images';
  if (block.type === 'document') return 'documents';
  if (block.type === 'tool-result' && block.content.some((part) => part.type === 'image')) return 'images';
  return undefined;
}

function toDeepSeekMessage(built: OpenAIMessage, source: CanonicalMessage, thinking: boolean): DeepSeekMessage {
  switch (built.role) {
    case 'tool':
      return { role: 'tool', content: flatten(built.content), tool_call_id: built.tool_call_id };
    case 'assistant': {
      const message: DeepSeekMessage = {
        role: 'assistant',
        content: built.content === null ? null : flatten(built.content),
        ...(built.tool_calls === undefined ? {} : { tool_calls: built.tool_calls }),
        ...(built.name === undefined ? {} : { name: built.name }),
      };
      if (thinking && built.tool_calls !== undefined) message.reasoning_content = reasoningText(source);
      return message;
    }
    case 'developer':
    case 'system':
      return {
        role: 'system',
        content: flatten(built.content),
        ...(built.name === undefined ? {} : { name: built.name }),
      };
    case 'user':
      return {
        role: 'user',
        content: flatten(built.content),
        ...(built.name === undefined ? {} : { name: built.name }),
      };
  }
}

/** Text parts as one string; non-text parts cannot occur here (refused before building). */
function flatten(content: string | ReadonlyArray<{ type: string; text?: string }>): string {
  if (typeof content === 'string') return content;
  return joinText(
    content.flatMap((part) => (part.type === 'text' && part.text !== undefined ? [{ text: part.text }] : [])),
  );
}

function joinText(parts: ReadonlyArray<{ text: string }>): string {
  return parts.map((part) => part.text).join('\n');
}

/** All reasoning text of the turn; redacted (Anthropic-encrypted) blocks have none to give. */
function reasoningText(message: CanonicalMessage): string {
  const texts: string[] = [];
  for (const block of message.content) if (block.type === 'reasoning' && block.text !== '') texts.push(block.text);
  return texts.join('\n');
}

function mergeSameRole(messages: readonly DeepSeekMessage[]): DeepSeekMessage[] {
  const merged: DeepSeekMessage[] = [];
  for (const message of messages) {
    const previous = merged[merged.length - 1];
    if (previous === undefined || previous.role !== message.role || message.role === 'tool') merged.push(message);
    else merged[merged.length - 1] = mergePair(previous, message);
  }
  return merged;
}

/** Two messages of one role as one; text joined by a blank line so the turns stay distinguishable. */
function mergePair(first: DeepSeekMessage, second: DeepSeekMessage): DeepSeekMessage {
  if (first.role === 'assistant' && second.role === 'assistant') {
    const toolCalls = [...(first.tool_calls ?? []), ...(second.tool_calls ?? [])];
    const reasoning = [first.reasoning_content, second.reasoning_content].filter(
      (text): text is string => text !== undefined,
    );
    const content = joinNonEmpty([first.content, second.content]);
    return {
      role: 'assistant',
      content: content === '' && first.content === null && second.content === null ? null : content,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      ...(reasoning.length > 0 ? { reasoning_content: joinNonEmpty(reasoning, '\n') } : {}),
      ...sharedName(first.name, second.name),
    };
  }
  if ((first.role === 'system' || first.role === 'user') && second.role === first.role) {
    return {
      role: first.role,
      content: joinNonEmpty([first.content, second.content]),
      ...sharedName(first.name, second.name),
    };
  }
  return second; // tool messages are never merged; unreachable
}

function joinNonEmpty(texts: ReadonlyArray<string | null>, separator = '\n\n'): string {
  return texts.filter((text): text is string => text !== null && text !== '').join(separator);
}

/** A participant name survives a merge only when both messages carry the same one. */
function sharedName(first: string | undefined, second: string | undefined): { name?: string } {
  return first !== undefined && first === second ? { name: first } : {};
}

/** An assistant turn without tool calls must have content; an empty string is the neutral value. */
function withAssistantContent(message: DeepSeekMessage): DeepSeekMessage {
  if (message.role === 'assistant' && message.content === null && message.tool_calls === undefined)
    return { ...message, content: '' };
  return message;
}
