import type { ServerToolCallBlock, ServerToolResultBlock } from '../../canonical/server-tools.js';
import { serverToolResultAsText } from '../server-tool-history.js';
import type {
  AnthropicTextBlock,
  AnthropicServerToolResultBlock,
  AnthropicServerToolUseBlock,
} from '../../wire/anthropic-messages-wire.js';

/**
 * Server-tool blocks of an earlier reply, sent back to Anthropic: its own result objects as received (the search
 * results' encrypted page text is what lets the model read them again), and the call that asked for them.
 */

export function encodeServerToolUseParam(block: ServerToolCallBlock): AnthropicServerToolUseBlock {
  return { type: 'server_tool_use', id: block.id, name: block.name, input: block.input };
}

/** Anthropic's own result as received; one another family produced (no encrypted page text) goes as text. */
export function encodeServerToolResultParam(
  block: ServerToolResultBlock,
  param: string,
): AnthropicServerToolResultBlock | AnthropicTextBlock {
  if (block.anthropicBlock !== undefined) return { ...(block.anthropicBlock as AnthropicServerToolResultBlock) };
  return serverToolResultAsText(block, param);
}
