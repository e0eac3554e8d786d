import type { CanonicalEvent } from '../../canonical/events.js';
import { GeminiResponseMapper, type GeminiResponseMapperOptions } from './gemini-response-mapper.js';
import type { GeminiGenerateContentResponse } from '../../wire/gemini-generate-wire.js';

/** A whole (non-stream) `GenerateContentResponse` as the canonical events a stream of it would have produced. */
export function mapGeminiResponse(
  response: GeminiGenerateContentResponse,
  options: GeminiResponseMapperOptions,
): CanonicalEvent[] {
  const mapper = new GeminiResponseMapper(options);
  return [...mapper.chunk(response), ...mapper.end()];
}
