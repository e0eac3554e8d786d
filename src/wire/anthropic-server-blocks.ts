/**
 * Reading Anthropic's server-tool blocks and citations, for the client protocol (history sent back) and the adapter
 * (replies) alike: the pages a web search found and the sources a text cites, in plain terms any family can show.
 */

export interface FoundPage {
  url: string;
  title: string;
  pageAge?: string;
}

export interface CitedSource {
  url: string;
  title?: string;
  citedText?: string;
  anthropic: Readonly<Record<string, unknown>>;
}

/** The pages of a `web_search_tool_result` (an error result has none); undefined for other blocks. */
export function anthropicWebSearchResults(type: string, content: unknown): FoundPage[] | undefined {
  if (type !== 'web_search_tool_result') return undefined;
  if (!Array.isArray(content)) return [];
  return content.flatMap((entry: Record<string, unknown> | null) =>
    entry?.type === 'web_search_result' && typeof entry.url === 'string'
      ? [
          {
            url: entry.url,
            title: typeof entry.title === 'string' ? entry.title : entry.url,
            ...(typeof entry.page_age === 'string' ? { pageAge: entry.page_age } : {}),
          },
        ]
      : [],
  );
}

/** One of Anthropic's citation objects; only web citations carry a URL another family can show. */
export function anthropicCitedSource(citation: Readonly<Record<string, unknown>>): CitedSource {
  return {
    url: typeof citation.url === 'string' ? citation.url : '',
    ...(typeof citation.title === 'string' ? { title: citation.title } : {}),
    ...(typeof citation.cited_text === 'string' ? { citedText: citation.cited_text } : {}),
    anthropic: citation,
  };
}

/**
 * A source as an Anthropic citation: Anthropic's own object as received, or a web citation built from another
 * family's source (its encrypted index is Anthropic's alone to give, so it is empty).
 */
export function anthropicCitation(source: {
  url: string;
  title?: string;
  citedText?: string;
  anthropic?: Readonly<Record<string, unknown>>;
}): unknown {
  return (
    source.anthropic ?? {
      type: 'web_search_result_location',
      url: source.url,
      title: source.title ?? null,
      cited_text: source.citedText ?? '',
      encrypted_index: '',
    }
  );
}
