import type { Citation, ServerToolCallBlock, ServerToolResultBlock } from '../../canonical/server-tools.js';
import { serverToolResultAsText } from '../server-tool-history.js';
import type {
  AnthropicTextBlock,
  AnthropicServerToolResultBlock,
  AnthropicServerToolUseBlock,
} from '../../wire/anthropic-messages-wire.js';

/**
 * Server-tool blocks and citations of an earlier reply, sent back to Anthropic: its own objects as received (the
 * search results' encrypted page text is what lets the model read them again). `caller` is a reply field the
 * request side also accepts; it is kept as received.
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

export function encodeCitation(citation: Citation): unknown {
  return (
    citation.anthropic ?? {
      type: 'web_search_result_location',
      url: citation.url,
      title: citation.title ?? null,
      cited_text: citation.citedText ?? '',
      encrypted_index: '',
    }
  );
}
