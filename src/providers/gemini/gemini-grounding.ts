import { invalidRequest } from '../../canonical/errors.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { Citation, ServerToolUsage } from '../../canonical/server-tools.js';
import type { GeminiGroundingMetadata, GeminiTool } from '../../wire/gemini-generate-wire.js';

/**
 * A web search as Gemini runs it: Google Search grounding. It takes no limits: domain lists would change which
 * sources the reply may use, so they are refused; a search count or location only tunes it, so they are dropped and
 * reported. Grounding comes back as `groundingMetadata`, read here into citations and a search count.
 */
export function buildGoogleSearchTool(request: CanonicalRequest, dropped: Set<string>): GeminiTool | undefined {
  const searches = (request.serverTools ?? []).filter((tool) => tool.kind === 'web-search');
  if (searches.length === 0) return undefined;
  for (const tool of searches) {
    const options = tool.webSearch ?? {};
    if (options.allowedDomains !== undefined || options.blockedDomains !== undefined) {
      const field = options.allowedDomains !== undefined ? 'allowed_domains' : 'blocked_domains';
      throw invalidRequest(
        `'${tool.param}.${field}': Google Search grounding on gamma models cannot be limited to domains; remove the list or use an alpha model.`,
        `${tool.param}.${field}`,
      );
    }
    if (options.maxUses !== undefined) dropped.add(`${tool.param}.max_uses`);
    if (options.userLocation !== undefined) dropped.add(`${tool.param}.user_location`);
    if (options.contextSize !== undefined) dropped.add(`${tool.param}.search_context_size`);
  }
  return { googleSearch: {} };
}

/**
 * The pages grounding cites, one citation per page a passage of the text relies on, with that passage. Pages found
 * but supporting no passage are cited without one, so no source is lost.
 */
export function groundingCitations(grounding: GeminiGroundingMetadata): Citation[] {
  const pages = (grounding.groundingChunks ?? []).map((chunk) => chunk.web);
  const citations: Citation[] = [];
  const cited = new Set<number>();
  for (const support of grounding.groundingSupports ?? []) {
    for (const index of support.groundingChunkIndices ?? []) {
      const page = pages[index];
      if (page?.uri === undefined) continue;
      cited.add(index);
      citations.push({
        url: page.uri,
        ...(page.title === undefined ? {} : { title: page.title }),
        ...(support.segment?.text === undefined ? {} : { citedText: support.segment.text }),
      });
    }
  }
  pages.forEach((page, index) => {
    if (page?.uri !== undefined && !cited.has(index))
      citations.push({ url: page.uri, ...(page.title === undefined ? {} : { title: page.title }) });
  });
  return citations;
}

/**
 * The searches a grounded reply is billed for: Gemini 3 and later bill each search query, Gemini 2 models each
 * grounded prompt (one, however many queries it ran).
 */
export function groundingUsage(grounding: GeminiGroundingMetadata, billedPerPrompt: boolean): ServerToolUsage {
  const queries = grounding.webSearchQueries?.length ?? 0;
  return { webSearchRequests: billedPerPrompt ? Math.min(1, queries) : queries, webFetchRequests: 0 };
}

/**
 * The searches grounding ran, as canonical server-tool blocks: one call per query and one result listing the pages,
 * so a client that shows searches (Anthropic's blocks, Google's `webSearchQueries`) sees them.
 */
export function groundingSearchEvents(grounding: GeminiGroundingMetadata, idPrefix: string): CanonicalEvent[] {
  const queries = grounding.webSearchQueries ?? [];
  if (queries.length === 0) return [];
  const searchResults = (grounding.groundingChunks ?? []).flatMap((chunk) =>
    chunk.web?.uri === undefined ? [] : [{ url: chunk.web.uri, title: chunk.web.title ?? chunk.web.uri }],
  );
  const events: CanonicalEvent[] = queries.map((query, index) => ({
    type: 'server-tool-call',
    blockId: `search-${index + 1}`,
    id: `${idPrefix}_${index + 1}`,
    name: 'web_search',
    input: { query },
  }));
  events.push({
    type: 'server-tool-result',
    blockId: 'search-results',
    result: {
      type: 'server-tool-result',
      toolCallId: `${idPrefix}_${queries.length}`,
      resultType: 'web_search_tool_result',
      searchResults,
    },
  });
  return events;
}
