import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { SseEvent } from '../../streaming/sse-decoder.js';
import { geminiErrorOf, geminiUpstreamError } from './gemini-errors.js';
import { GeminiResponseMapper, type GeminiResponseMapperOptions } from './gemini-response-mapper.js';
import type { GeminiGenerateContentResponse } from '../../wire/gemini-generate-wire.js';

/**
 * Gemini `streamGenerateContent?alt=sse` events → canonical events. Each SSE event is one
 * `GenerateContentResponse` holding only new parts (CRLF framing is the SSE decoder's business). There is no
 * `[DONE]`: the reply ends with the HTTP body, and `end()` must be called then — it emits the finish and
 * usage, or fails when no chunk ever gave a finish reason (a cut-off stream is an upstream fault).
 * An `error` object inside the body is the vendor failing mid-reply; it is mapped by its `code` like an
 * HTTP error.
 */
export class GeminiStreamMapper {
  private readonly mapper: GeminiResponseMapper;

  constructor(private readonly options: GeminiResponseMapperOptions) {
    this.mapper = new GeminiResponseMapper(options);
  }

  map(event: SseEvent): CanonicalEvent[] {
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.options.vendorLabel} sent a stream chunk that is not valid JSON.`,
      );
    }
    if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) {
      throw new GatewayError(
        'upstream_bad_response',
        `${this.options.vendorLabel} sent a stream chunk that is not a JSON object.`,
      );
    }
    const error = geminiErrorOf(chunk);
    if (error !== undefined) {
      const status = typeof error.code === 'number' && error.code >= 400 && error.code <= 599 ? error.code : 500;
      throw geminiUpstreamError(error, status, this.options.vendorLabel);
    }
    return this.mapper.chunk(chunk as GeminiGenerateContentResponse);
  }

  end(): CanonicalEvent[] {
    return this.mapper.end();
  }
}
