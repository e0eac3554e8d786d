import type { ContentBlock } from '../../canonical/request.js';
import type { ServerToolDefinition, UserLocation } from '../../canonical/server-tools.js';
import { anthropicWebSearchResults } from '../../wire/anthropic-server-blocks.js';
import type { AnthropicAssistantBlock } from './anthropic-messages-schema.js';
import { type AnthropicServerTool, WEB_FETCH_TYPES, WEB_SEARCH_TYPES } from './anthropic-server-tool-schema.js';

/**
 * Anthropic's own tools and their blocks → the canonical model: what they mean (a web search and its limits), for a
 * family with an equivalent, and the objects as sent, so an Anthropic upstream gets them back intact.
 */

const WEB_SEARCH: ReadonlySet<string> = new Set(WEB_SEARCH_TYPES);
const WEB_FETCH: ReadonlySet<string> = new Set(WEB_FETCH_TYPES);

export function decodeAnthropicServerTool(tool: AnthropicServerTool, param: string): ServerToolDefinition {
  const anthropicTool = tool as Readonly<Record<string, unknown>>;
  if (WEB_SEARCH.has(tool.type)) {
    const webSearch: ServerToolDefinition['webSearch'] = {};
    const search = tool as Extract<AnthropicServerTool, { name: 'web_search' }>;
    if (typeof search.max_uses === 'number') webSearch.maxUses = search.max_uses;
    if (search.allowed_domains) webSearch.allowedDomains = search.allowed_domains;
    if (search.blocked_domains) webSearch.blockedDomains = search.blocked_domains;
    if (search.user_location) webSearch.userLocation = decodeUserLocation(search.user_location);
    return { kind: 'web-search', label: tool.type, param, webSearch, anthropicTool };
  }
  return { kind: WEB_FETCH.has(tool.type) ? 'web-fetch' : 'anthropic-only', label: tool.type, param, anthropicTool };
}

function decodeUserLocation(location: Record<string, string | null | undefined>): UserLocation {
  const out: UserLocation = {};
  for (const field of ['city', 'region', 'country', 'timezone'] as const) {
    const value = location[field];
    if (typeof value === 'string') out[field] = value;
  }
  return out;
}

type ServerBlock = Extract<AnthropicAssistantBlock, { type: 'server_tool_use' } | { tool_use_id: string }>;

/** A `server_tool_use` or result block of an earlier reply. */
export function decodeAnthropicServerBlock(block: ServerBlock): ContentBlock {
  const { cache_control: _cache, ...rest } = block;
  if (block.type === 'server_tool_use')
    return { type: 'server-tool-call', id: block.id, name: block.name, input: block.input };
  const searchResults = anthropicWebSearchResults(block.type, block.content);
  return {
    type: 'server-tool-result',
    toolCallId: block.tool_use_id,
    resultType: block.type,
    ...(searchResults === undefined ? {} : { searchResults }),
    anthropicBlock: rest,
  };
}
