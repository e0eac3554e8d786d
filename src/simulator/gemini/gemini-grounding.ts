/**
 * Google Search grounding, emulated: with a `googleSearch` tool the reply is grounded on one search query, its last
 * response carrying `groundingMetadata` (the query, two pages, the passage of the text each supports), as Gemini
 * sends it. Gemini shows no search blocks in the content: the grounding is all a client sees of the search.
 */
import { hashHex } from '../reply-engine.js';
import type { GeminiRequest } from './gemini-types.js';

export function hasGoogleSearch(request: GeminiRequest): boolean {
  return (request.tools ?? []).some((tool) => (tool as Record<string, unknown>)['googleSearch'] !== undefined);
}

export function groundingMetadata(lastUserText: string, replyText: string): object {
  const query = lastUserText.trim().split(/\s+/).slice(0, 8).join(' ') || 'search';
  const seed = hashHex(`grounding:${query}`, 12);
  const pages = [1, 2].map((rank) => ({
    web: { uri: `https://vertexaisearch.example/grounding/${seed}/${rank}`, title: `source${rank}.example` },
  }));
  const segment = replyText.split(/(?<=[.!?])\s/)[0] ?? replyText;
  return {
    webSearchQueries: [query],
    searchEntryPoint: { renderedContent: `<div class="sim-search">${query}</div>` },
    groundingChunks: pages,
    groundingSupports:
      segment === ''
        ? []
        : [
            {
              segment: { startIndex: 0, endIndex: Buffer.byteLength(segment), text: segment },
              groundingChunkIndices: [0, 1],
            },
          ],
  };
}
