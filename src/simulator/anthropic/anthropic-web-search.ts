/**
 * Anthropic's web search, emulated: tool parameters checked as the vendor checks them, and a reply that opens with
 * one search (`server_tool_use`, then `web_search_tool_result` with pages whose encrypted content only this
 * simulator can verify), its text citing the first page, and `usage.server_tool_use` counting the search.
 */
import { hashHex } from '../reply-engine.js';
import type { AnthropicMessage, AnthropicRequest } from './anthropic-types.js';
import { fail, type Json } from './anthropic-validate-blocks.js';

const WEB_SEARCH_TYPE = /^web_search_\d{8}$/;

/** Checks a server tool's parameters (only web search has any the simulator reads). */
export function checkServerTool(tool: Json, path: string): void {
  if (!WEB_SEARCH_TYPE.test(String(tool['type']))) return;
  if (tool['name'] !== 'web_search') fail(`${path}.name: Input should be 'web_search'`);
  const maxUses = tool['max_uses'];
  if (maxUses !== undefined && maxUses !== null && (!Number.isInteger(maxUses) || (maxUses as number) < 1))
    fail(`${path}.max_uses: Input should be greater than 0`);
  if (isList(tool['allowed_domains']) && isList(tool['blocked_domains']))
    fail(`${path}: Cannot specify both allowed_domains and blocked_domains`);
  const location = tool['user_location'];
  if (location !== undefined && location !== null) {
    if (typeof location !== 'object' || (location as Json)['type'] !== 'approximate')
      fail(`${path}.user_location.type: Input should be 'approximate'`);
  }
}

function isList(value: unknown): boolean {
  return Array.isArray(value);
}

export function hasWebSearch(request: AnthropicRequest): boolean {
  return (request.tools ?? []).some((tool) => WEB_SEARCH_TYPE.test(String((tool as unknown as Json)['type'])));
}

/** The simulator's token for a page: Anthropic refuses search results whose encrypted content was altered. */
function encryptedContent(url: string): string {
  return `EqsimPage${hashHex(`page:${url}`, 32)}`;
}

/** Results sent back in history must be the simulator's own, byte for byte. */
export function checkSearchResultsIntact(messages: readonly AnthropicMessage[]): void {
  messages.forEach((message, index) => {
    if (!Array.isArray(message.content)) return;
    message.content.forEach((block, blockIndex) => {
      const json = block as Json;
      if (json['type'] !== 'web_search_tool_result' || !Array.isArray(json['content'])) return;
      for (const page of json['content'] as Json[]) {
        if (page['encrypted_content'] !== encryptedContent(String(page['url'])))
          fail(`messages.${index}.content.${blockIndex}: Invalid encrypted_content in web_search_tool_result`);
      }
    });
  });
}

export interface WebSearchTurn {
  toolUseId: string;
  query: string;
  pages: Array<{ type: 'web_search_result'; url: string; title: string; encrypted_content: string; page_age: string }>;
  citation: Json;
}

/** The search this turn makes: a query from the user's words, three pages, a citation of the first. */
export function planWebSearch(lastUserText: string, request: AnthropicRequest): WebSearchTurn {
  const query = lastUserText.trim().split(/\s+/).slice(0, 8).join(' ') || 'search';
  const seed = hashHex(`search:${query}:${request.model}`, 12);
  const pages = [1, 2, 3].map((rank) => {
    const url = `https://example.com/${seed}/${rank}`;
    return {
      type: 'web_search_result' as const,
      url,
      title: `Result ${rank} for ${query}`,
      encrypted_content: encryptedContent(url),
      page_age: `${rank} days ago`,
    };
  });
  const first = pages[0]!;
  return {
    toolUseId: `srvtoolu_01${hashHex(`srv:${seed}`, 22)}`,
    query,
    pages,
    citation: {
      type: 'web_search_result_location',
      url: first.url,
      title: first.title,
      cited_text: `What the first page says about ${query}.`,
      encrypted_index: `Eosim${hashHex(`index:${first.url}`, 16)}`,
    },
  };
}
