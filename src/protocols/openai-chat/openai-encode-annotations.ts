import type { Citation } from '../../canonical/server-tools.js';
import { citationSpan } from '../shared/citation-span.js';

/** OpenAI's `url_citation` annotation of a chat message: a cited page and the span of `content` it supports. */
export interface UrlCitationAnnotation {
  type: 'url_citation';
  url_citation: { url: string; title: string; start_index: number; end_index: number };
}

export function urlCitationAnnotation(
  citation: Citation,
  blockText: string,
  blockOffset: number,
): UrlCitationAnnotation {
  return {
    type: 'url_citation',
    url_citation: {
      url: citation.url,
      title: citation.title ?? citation.url,
      ...citationSpan(citation, blockText, blockOffset),
    },
  };
}
