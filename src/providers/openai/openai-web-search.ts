import { invalidRequest } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import type { Citation, ServerToolDefinition, ServerToolUsage } from '../../canonical/server-tools.js';

/**
 * A web search as OpenAI's Chat Completions runs it: only on a dedicated search model, asked with
 * `web_search_options`, answered with `url_citation` annotations. The search model takes no function tools, several
 * choices or log probabilities (each would change the reply's contract: refused), nor sampling settings (they only
 * tune it: dropped and reported).
 */

/** The web search a request carries, if any (several tools merge into one: the search model runs one search). */
export function requestedWebSearch(request: CanonicalRequest): ServerToolDefinition | undefined {
  return request.serverTools?.find((tool) => tool.kind === 'web-search');
}

/** Sampling fields OpenAI's search models refuse; the reply is still the one asked for without them. */
const SEARCH_MODEL_DROPPED_FIELDS = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty'] as const;

/**
 * Fits a chat-completions body to the search model: `web_search_options` from the tool's limits, the fields it
 * refuses dropped (reported) or refused with a 400 naming both fields.
 */
export function applyWebSearch(
  body: Record<string, unknown>,
  request: CanonicalRequest,
  search: ServerToolDefinition,
  dropped: string[],
): void {
  const options = search.webSearch ?? {};
  for (const field of ['allowedDomains', 'blockedDomains'] as const) {
    if (options[field] === undefined) continue;
    const name = field === 'allowedDomains' ? 'allowed_domains' : 'blocked_domains';
    throw invalidRequest(
      `'${search.param}.${name}': web search on beta models cannot be limited to domains; remove the list or use an alpha model.`,
      `${search.param}.${name}`,
    );
  }
  const conflict = searchModelConflict(request);
  if (conflict !== undefined) {
    throw invalidRequest(
      `'${search.param}' cannot be combined with '${conflict}' on beta models: their web search runs on a search model that does not take it.`,
      conflict,
    );
  }
  if (options.maxUses !== undefined) dropped.push(`${search.param}.max_uses`);
  const webSearchOptions: Record<string, unknown> = {};
  if (options.contextSize !== undefined) webSearchOptions.search_context_size = options.contextSize;
  if (options.userLocation !== undefined)
    webSearchOptions.user_location = { type: 'approximate', approximate: { ...options.userLocation } };
  body.web_search_options = webSearchOptions;
  for (const field of SEARCH_MODEL_DROPPED_FIELDS) {
    if (body[field] === undefined) continue;
    delete body[field];
    dropped.push(field);
  }
}

/** The first field the request sets that a search model refuses and that would change the reply, as the client named it. */
export function searchModelConflict(request: CanonicalRequest): string | undefined {
  if (request.tools !== undefined && request.tools.length > 0) return 'tools';
  if (request.choices !== undefined && request.choices.count > 1) return request.choices.param;
  return request.logprobs?.param;
}

/** What the search ran for: the last user message's text (the search model searches for the user's question). */
export function webSearchQuery(request: CanonicalRequest): string {
  const lastUser = request.messages.findLast((message) => message.role === 'user');
  const text = (lastUser?.content ?? []).flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
  return text.trim();
}

/** One `url_citation` annotation as OpenAI sends it. */
interface UrlCitation {
  type: 'url_citation';
  url_citation: { url: string; title?: string; start_index?: number; end_index?: number };
}

/** The pages a reply's annotations cite, each with the passage of `content` it supports. */
export function annotationCitations(annotations: readonly unknown[], content: string): Citation[] {
  return annotations.flatMap((annotation): Citation[] => {
    if (!isUrlCitation(annotation)) return [];
    const { url, title, start_index: start, end_index: end } = annotation.url_citation;
    const citedText = start !== undefined && end !== undefined && end > start ? content.slice(start, end) : '';
    return [{ url, ...(title === undefined ? {} : { title }), ...(citedText === '' ? {} : { citedText }) }];
  });
}

function isUrlCitation(annotation: unknown): annotation is UrlCitation {
  if (annotation === null || typeof annotation !== 'object') return false;
  const { type, url_citation: citation } = annotation as Partial<UrlCitation>;
  return type === 'url_citation' && typeof citation?.url === 'string';
}

/** OpenAI bills a search model's call as one search, however many queries it ran. */
export const ONE_SEARCH: ServerToolUsage = { webSearchRequests: 1, webFetchRequests: 0 };

/**
 * The search as canonical server-tool blocks, so a client that shows searches (Anthropic's blocks) sees it: the
 * search model tells neither its query nor its results, so the call carries the user's question and the result
 * lists the pages the reply cites.
 */
export function webSearchEvents(query: string, citations: readonly Citation[], callId: string): CanonicalEvent[] {
  const pages = new Map<string, string>();
  for (const citation of citations)
    if (!pages.has(citation.url)) pages.set(citation.url, citation.title ?? citation.url);
  return [
    { type: 'server-tool-call', blockId: 'web-search', id: callId, name: 'web_search', input: { query } },
    {
      type: 'server-tool-result',
      blockId: 'web-search-results',
      result: {
        type: 'server-tool-result',
        toolCallId: callId,
        resultType: 'web_search_tool_result',
        searchResults: [...pages].map(([url, title]) => ({ url, title })),
      },
    },
  ];
}
