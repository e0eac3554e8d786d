import type { Citation, ServerToolCallBlock, ServerToolResultBlock } from '../../canonical/server-tools.js';
import type {
  AnthropicServerToolResultBlock,
  AnthropicServerToolUseBlock,
} from '../../wire/anthropic-messages-wire.js';
import { anthropicCitation } from '../../wire/anthropic-server-blocks.js';

/**
 * Server-tool blocks and citations in Anthropic's shape. From Anthropic they are its own objects, relayed as
 * received; from another family (a web search OpenAI or Gemini ran) they are built from what the vendor told.
 */

export function encodeServerToolUse(id: string, name: string, input: unknown): AnthropicServerToolUseBlock {
  return { type: 'server_tool_use', id, name, input, caller: { type: 'direct' } };
}

export function encodeServerToolResult(block: ServerToolResultBlock): AnthropicServerToolResultBlock {
  if (block.anthropicBlock !== undefined) return block.anthropicBlock as AnthropicServerToolResultBlock;
  return {
    type: 'web_search_tool_result',
    tool_use_id: block.toolCallId,
    caller: { type: 'direct' },
    content: (block.searchResults ?? []).map((result) => ({
      type: 'web_search_result',
      url: result.url,
      title: result.title,
      page_age: result.pageAge ?? null,
      // Only Anthropic can read its encrypted page text; a translated result has none to give.
      encrypted_content: '',
    })),
  };
}

export function encodeServerToolCall(block: ServerToolCallBlock): AnthropicServerToolUseBlock {
  return encodeServerToolUse(block.id, block.name, block.input);
}

/** A text block's `citations`: null when it cites nothing, as Anthropic sends it. */
export function encodeCitations(citations: readonly Citation[] | undefined): unknown[] | null {
  return citations === undefined || citations.length === 0 ? null : citations.map(anthropicCitation);
}
