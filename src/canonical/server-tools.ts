/**
 * Vendor-run tools ("server tools"): the vendor itself searches the web, fetches a page or runs code during the reply,
 * and bills each use. The canonical model names what they mean (a web search with its limits) so another family can
 * run its own equivalent, and keeps Anthropic's objects as sent so an Anthropic upstream gets them back intact.
 */

import type { CacheBreakpoint } from './request.js';

/** What a server tool does; `anthropic-only` covers Anthropic's tools no other family offers (code execution, memory…). */
export type ServerToolKind = 'web-search' | 'web-fetch' | 'anthropic-only';

export interface UserLocation {
  city?: string;
  region?: string;
  /** ISO 3166-1 alpha-2. */
  country?: string;
  /** IANA time zone. */
  timezone?: string;
}

/** A web search's limits, in every family's terms. */
export interface WebSearchOptions {
  /** Most searches in one reply (Anthropic's `max_uses`). */
  maxUses?: number;
  allowedDomains?: string[];
  blockedDomains?: string[];
  userLocation?: UserLocation;
  /** OpenAI's `search_context_size` (low, medium, high): how much page text the search feeds the model. */
  contextSize?: string;
}

export interface ServerToolDefinition {
  kind: ServerToolKind;
  /** The tool as the caller named it, for refusals: `web_search_20250305`, `web_search_options`, `googleSearch`. */
  label: string;
  /** Where the caller declared it (`tools[2]`, `web_search_options`), for refusals naming the caller's field. */
  param: string;
  webSearch?: WebSearchOptions;
  /** Anthropic's tool object as an Anthropic client sent it: replayed to Anthropic untouched. */
  anthropicTool?: Readonly<Record<string, unknown>>;
  /**
   * The name under which the tool is dropped and reported where the model's family has no equivalent, for a client
   * protocol whose rule is that a model not offered a hosted tool answers without it (OpenAI Responses). Absent:
   * such a family refuses the request.
   */
  droppedAs?: string;
}

/** One page a web search found. */
export interface WebSearchResult {
  url: string;
  title: string;
  /** How old the page is, as the vendor words it ("2 days ago"). */
  pageAge?: string;
}

/** A source a reply's text cites: a web page, and the passage cited when the vendor says. */
export interface Citation {
  url: string;
  title?: string;
  citedText?: string;
  /** Anthropic's citation object as received: replayed to Anthropic untouched. */
  anthropic?: Readonly<Record<string, unknown>>;
}

/** The vendor's call of one of its own tools (Anthropic's `server_tool_use`): run by the vendor, never by the client. */
export interface ServerToolCallBlock {
  type: 'server-tool-call';
  id: string;
  /** The vendor's tool name: `web_search`, `web_fetch`, `code_execution`… */
  name: string;
  input: unknown;
  cache?: CacheBreakpoint;
}

/** What a server tool returned (Anthropic's `web_search_tool_result` and kin). */
export interface ServerToolResultBlock {
  type: 'server-tool-result';
  toolCallId: string;
  /** Anthropic's block type, e.g. `web_search_tool_result`. */
  resultType: string;
  /** The pages found, when the result is a web search's. */
  searchResults?: WebSearchResult[];
  /** Anthropic's block as received: replayed to Anthropic untouched. */
  anthropicBlock?: Readonly<Record<string, unknown>>;
  cache?: CacheBreakpoint;
}

/** Billable uses of server tools in one reply. */
export interface ServerToolUsage {
  webSearchRequests: number;
  webFetchRequests: number;
}

/**
 * Searches a reply may make when the caller set no limit: the gateway sends this limit to the vendor, so the hold
 * taken at admission covers every search the reply can make and the balance is never passed.
 */
export const DEFAULT_WEB_SEARCH_MAX_USES = 5;

/** The most searches a request's web search tools allow in one reply. */
export function webSearchLimit(tools: readonly ServerToolDefinition[] | undefined): number {
  let total = 0;
  for (const tool of tools ?? [])
    if (tool.kind === 'web-search') total += tool.webSearch?.maxUses ?? DEFAULT_WEB_SEARCH_MAX_USES;
  return total;
}

/** The request's tool choice makes the reply run a web search: it names one, or requires a tool and only searches are offered. */
export function forcesWebSearch(request: {
  serverTools?: readonly ServerToolDefinition[];
  tools?: readonly unknown[];
  toolChoice?: { type: string; name?: string };
}): boolean {
  const searches = (request.serverTools ?? []).filter((tool) => tool.kind === 'web-search');
  if (searches.length === 0) return false;
  const choice = request.toolChoice;
  if (choice?.type === 'required') return (request.tools ?? []).length === 0;
  return choice?.type === 'tool' && searches.some((tool) => tool.anthropicTool?.['name'] === choice.name);
}
