import type { Citation } from '../../canonical/server-tools.js';
import type { GeminiGroundingMetadata } from '../../wire/gemini-generate-wire.js';

/**
 * A reply's web search as Google shows it: `groundingMetadata` with the queries run, each cited page once
 * (`groundingChunks`) and each cited passage pointing at its pages (`groundingSupports`). Gemini's clients read
 * sources only from here, whichever vendor searched.
 */
export class GroundingCollector {
  private readonly queries: string[] = [];
  private readonly citations: Citation[] = [];

  /** A server tool's call: its `query` is a search the reply ran. */
  addCall(input: unknown): void {
    const query = (input as { query?: unknown } | null)?.query;
    if (typeof query === 'string' && query !== '') this.queries.push(query);
  }

  addCitation(citation: Citation): void {
    if (citation.url !== '') this.citations.push(citation);
  }

  /** Undefined when the reply searched nothing and cited nothing. */
  metadata(): GeminiGroundingMetadata | undefined {
    if (this.queries.length === 0 && this.citations.length === 0) return undefined;
    const pageIndex = new Map<string, number>();
    const groundingChunks: NonNullable<GeminiGroundingMetadata['groundingChunks']> = [];
    const groundingSupports: NonNullable<GeminiGroundingMetadata['groundingSupports']> = [];
    for (const citation of this.citations) {
      let index = pageIndex.get(citation.url);
      if (index === undefined) {
        index = groundingChunks.length;
        pageIndex.set(citation.url, index);
        groundingChunks.push({
          web: { uri: citation.url, ...(citation.title === undefined ? {} : { title: citation.title }) },
        });
      }
      if (citation.citedText !== undefined && citation.citedText !== '')
        groundingSupports.push({ segment: { text: citation.citedText }, groundingChunkIndices: [index] });
    }
    return { webSearchQueries: this.queries, groundingChunks, groundingSupports };
  }
}
