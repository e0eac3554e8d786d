import type { CanonicalRequest } from '../canonical/request.js';
import { DEFAULT_WEB_SEARCH_MAX_USES, type ServerToolDefinition } from '../canonical/server-tools.js';

/**
 * The request with no more web searches than its hold pays for, when the account's money fell short of every search
 * its tools allow: the search tools' limits lowered in turn where the vendor honours a limit (Anthropic's
 * `max_uses`), and a tool left with no search not offered at all, named in `dropped`. A request whose tool choice
 * forces a search is refused at admission instead.
 */
export function withHeldSearches(
  request: CanonicalRequest,
  held: number | undefined,
  vendorHonoursLimit: boolean,
): { request: CanonicalRequest; dropped: string[] } {
  const tools = request.serverTools;
  if (held === undefined || tools === undefined || (held > 0 && !vendorHonoursLimit)) return { request, dropped: [] };
  let left = held;
  const dropped: string[] = [];
  const kept: ServerToolDefinition[] = [];
  for (const tool of tools) {
    if (tool.kind !== 'web-search') {
      kept.push(tool);
      continue;
    }
    const limit = tool.webSearch?.maxUses ?? DEFAULT_WEB_SEARCH_MAX_USES;
    if (left === 0) dropped.push(tool.droppedAs ?? tool.param);
    else kept.push(limit <= left ? tool : withLimit(tool, left));
    left -= Math.min(limit, left);
  }
  if (dropped.length === 0 && kept.every((tool, index) => tool === tools[index])) return { request, dropped };
  const { serverTools: _all, ...rest } = request;
  return { request: kept.length > 0 ? { ...rest, serverTools: kept } : rest, dropped };
}

function withLimit(tool: ServerToolDefinition, maxUses: number): ServerToolDefinition {
  return {
    ...tool,
    webSearch: { ...tool.webSearch, maxUses },
    ...(tool.anthropicTool === undefined ? {} : { anthropicTool: { ...tool.anthropicTool, max_uses: maxUses } }),
  };
}
