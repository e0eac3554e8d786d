/**
 * Reads the prompt of a validated Anthropic request: the text the reply echoes and reads directives from,
 * the tool results of a final tool turn, the tools on offer, and the input token count (the same number
 * for `/v1/messages` usage and `/v1/messages/count_tokens`).
 *
 * Input tokens, with the o200k tokenizer: 3 per message + its text, tool inputs (JSON) and tool-result
 * text; a flat 1,600 per image (about what a 1092×1092 image costs) and 1,500 per PDF or remote document;
 * thinking only in the final assistant turn (Anthropic drops earlier turns' thinking from the context);
 * system text + 3 when present; the JSON of the tool definitions. Exact and reproducible, not Anthropic's.
 */
import { countPromptWithin, countTokens } from '../reply-engine.js';
import type { ToolOffer, ToolRequirement } from '../turn-planner.js';
import type { AnthropicBlock, AnthropicMessage, AnthropicRequest } from './anthropic-types.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_SYSTEM = 3;
const TOKENS_PER_IMAGE = 1_600;
const TOKENS_PER_DOCUMENT = 1_500;

function blocks(content: AnthropicMessage['content']): AnthropicBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function textOf(content: string | AnthropicBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
}

/** Text of the latest user message that has any (tool-result-only turns are skipped). */
export function lastUserText(messages: readonly AnthropicMessage[]): string {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const text = textOf(message.content);
    if (text.length > 0) return text;
  }
  return '';
}

/** Texts of the tool results in the final user turn, when it carries any. */
export function trailingToolResults(messages: readonly AnthropicMessage[]): string[] | undefined {
  // A system message after the results (an instruction for this turn) does not end the tool turn.
  const last = messages.findLast((message) => message.role !== 'system');
  if (last === undefined || last.role !== 'user') return undefined;
  const results = blocks(last.content).flatMap((block) =>
    block.type === 'tool_result' ? [`${block.is_error === true ? 'error: ' : ''}${textOf(block.content)}`] : [],
  );
  return results.length === 0 ? undefined : results;
}

export function blockTokens(block: AnthropicBlock, countThinking: boolean): number {
  switch (block.type) {
    case 'text':
      return countTokens(block.text);
    case 'image':
      return TOKENS_PER_IMAGE;
    case 'document':
      if (block.source.type === 'text') return countTokens(block.source.data);
      if (block.source.type === 'content')
        return blocks(block.source.content).reduce((sum, inner) => sum + blockTokens(inner, false), 0);
      return TOKENS_PER_DOCUMENT;
    case 'tool_use':
      return countTokens(block.name) + countTokens(JSON.stringify(block.input));
    case 'tool_result':
      return block.content === undefined
        ? 0
        : blocks(block.content).reduce((sum, inner) => sum + blockTokens(inner, false), 0);
    case 'thinking':
      return countThinking ? countTokens(block.thinking) : 0;
    default:
      return 0;
  }
}

export function countInputTokens(request: AnthropicRequest): number {
  return countPromptWithin(() => countInputTokensWithinBudget(request));
}

function countInputTokensWithinBudget(request: AnthropicRequest): number {
  let total = 0;
  const system =
    typeof request.system === 'string' ? request.system : (request.system ?? []).map((block) => block.text).join('\n');
  if (system.length > 0) total += TOKENS_PER_SYSTEM + countTokens(system);
  request.messages.forEach((message, index) => {
    const countThinking = message.role === 'assistant' && index >= request.messages.length - 2;
    total +=
      TOKENS_PER_MESSAGE + blocks(message.content).reduce((sum, block) => sum + blockTokens(block, countThinking), 0);
  });
  if (request.tools !== undefined && request.tools.length > 0) total += countTokens(JSON.stringify(request.tools));
  return total;
}

/**
 * What the reply is derived from: the conversation only, so stream and non-stream requests agree, and read as the
 * model reads it (see seedValue).
 */
export function replySeedText(request: AnthropicRequest): string {
  const system =
    typeof request.system === 'string' ? (request.system === '' ? [] : blocks(request.system)) : request.system;
  const messages = request.messages.map((message) => ({ role: message.role, content: blocks(message.content) }));
  return JSON.stringify(seedValue([system ?? [], messages]));
}

/**
 * A request's conversation as the model reads it, for the seed: content as blocks, keys in one order, no
 * `cache_control`, no thinking signatures (opaque, and keyed per simulator process). Spellings that mean the same
 * (a string or one text block, a gateway's re-encoding of the client's body, a moved breakpoint) then get the same
 * reply, as they would from the vendor, from any simulator process.
 */
function seedValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(seedValue);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value)
    .filter(([key]) => key !== 'cache_control' && key !== 'signature')
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([key, inner]) => [key, seedValue(key === 'content' && typeof inner === 'string' ? blocks(inner) : inner)]);
  return Object.fromEntries(entries);
}

export function toolOffers(request: AnthropicRequest): ToolOffer[] {
  return (request.tools ?? []).flatMap((tool) =>
    tool.input_schema === undefined ? [] : [{ name: tool.name, parameters: tool.input_schema }],
  );
}

export function toolRequirement(request: AnthropicRequest): ToolRequirement {
  const choice = request.tool_choice;
  const clientTools = toolOffers(request).map((tool) => tool.name);
  switch (choice?.type) {
    case 'none':
      return { kind: 'none' };
    case 'any':
      // Only server tools offered: the turn's use of one (a web search) is the tool use asked for.
      return clientTools.length === 0 ? { kind: 'auto' } : { kind: 'any' };
    case 'tool':
      // A server tool forced (Claude Code's WebSearch forces `web_search`): the vendor runs it, the turn answers.
      return clientTools.includes(choice.name) ? { kind: 'named', name: choice.name } : { kind: 'auto' };
    default:
      return { kind: 'auto' };
  }
}

/** The tool choice forces a server tool (one without an input schema): the vendor runs it this turn. */
export function forcesServerTool(request: AnthropicRequest): boolean {
  const choice = request.tool_choice;
  const clientTools = toolOffers(request).map((tool) => tool.name);
  if (choice?.type === 'any') return clientTools.length === 0;
  return choice?.type === 'tool' && !clientTools.includes(choice.name);
}

export function parallelCallsAllowed(request: AnthropicRequest): boolean {
  const choice = request.tool_choice;
  return choice === undefined || choice.type === 'none' || choice.disable_parallel_tool_use !== true;
}

export function isThinking(request: AnthropicRequest): boolean {
  return request.thinking !== undefined && request.thinking.type !== 'disabled';
}
