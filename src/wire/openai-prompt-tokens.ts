/**
 * Prompt tokens of a chat-completions body by OpenAI's published counting recipe for chat models (the
 * openai-cookbook "How to count tokens" notebook), with the o200k tokenizer:
 *   3 tokens per message + tokens of its role + tokens of its text + (1 + tokens of `name` when present)
 *   + tokens of each tool call's name and arguments + 85 per non-text part (the low-detail image base cost)
 *   + tokens of the JSON of the `tools` definitions + 3 tokens priming the reply.
 *
 * It lives with the wire types because both sides of the wire use it: the simulator reports it as the vendor's
 * `prompt_tokens`, and the gateway's OpenAI-format adapters count `/v1/messages/count_tokens` with it over the body
 * they would send, so the count agrees with what the request is billed. The tokenizer is passed in: each side
 * loads it its own way.
 */

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const TOKENS_REPLY_PRIMING = 3;
const TOKENS_PER_MEDIA_PART = 85;

/** The parts of a message the recipe reads; both sides' message types fit it. */
export interface CountableChatMessage {
  role: string;
  content?: string | ReadonlyArray<{ type: string; text?: string; refusal?: string }> | null;
  name?: string;
  tool_calls?: ReadonlyArray<{
    function?: { name: string; arguments: string };
    custom?: { name?: string; input?: string };
  }>;
}

export interface CountableChatRequest {
  messages: readonly CountableChatMessage[];
  tools?: readonly unknown[] | null;
}

/** Text parts of a message content joined with newlines (refusals count as text). */
export function chatContentText(content: CountableChatMessage['content']): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of content) {
    if (part.type === 'text' && part.text !== undefined) texts.push(part.text);
    else if (part.type === 'refusal' && part.refusal !== undefined) texts.push(part.refusal);
  }
  return texts.join('\n');
}

function mediaParts(content: CountableChatMessage['content']): number {
  if (!Array.isArray(content)) return 0;
  return content.filter((part) => part.type !== 'text' && part.type !== 'refusal').length;
}

export function countChatPromptTokens(request: CountableChatRequest, countTokens: (text: string) => number): number {
  let total = TOKENS_REPLY_PRIMING;
  for (const message of request.messages) {
    total += TOKENS_PER_MESSAGE + countTokens(message.role) + countTokens(chatContentText(message.content));
    total += TOKENS_PER_MEDIA_PART * mediaParts(message.content);
    if (message.name !== undefined) total += TOKENS_PER_NAME + countTokens(message.name);
    for (const call of message.tool_calls ?? []) {
      const body = call.function ?? { name: call.custom?.name ?? '', arguments: call.custom?.input ?? '' };
      total += countTokens(body.name) + countTokens(body.arguments);
    }
  }
  if (request.tools !== undefined && request.tools !== null && request.tools.length > 0)
    total += countTokens(JSON.stringify(request.tools));
  return total;
}
