import type { Citation } from '../../canonical/server-tools.js';

/**
 * The span of a reply's text a citation supports, as OpenAI's annotations mark it: the cited passage where the reply
 * quotes it (Gemini's grounding cites the reply's own words), else the whole text block (Anthropic cites the
 * source's words). `blockOffset` is where the block starts in the message's text.
 */
export function citationSpan(
  citation: Citation,
  blockText: string,
  blockOffset: number,
): { start_index: number; end_index: number } {
  const cited = citation.citedText ?? '';
  const quoted = cited === '' ? -1 : blockText.indexOf(cited);
  return quoted >= 0
    ? { start_index: blockOffset + quoted, end_index: blockOffset + quoted + cited.length }
    : { start_index: blockOffset, end_index: blockOffset + blockText.length };
}
