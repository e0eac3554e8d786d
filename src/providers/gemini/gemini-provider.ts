/**
 * The Gemini adapter (the gamma family): the Developer API v1beta, `generateContent`,
 * `streamGenerateContent?alt=sse` and `countTokens`, against generativelanguage.googleapis.com or the simulator.
 *
 * Policies chosen (each explained where it is implemented):
 * - Auth: the key travels in `x-goog-api-key`, never in the URL, so it cannot reach a log line.
 * - Mid-conversation system messages stay in place as user text marked `[System message]`; leading ones
 *   form `systemInstruction`. Consecutive same-role contents are merged.       (gemini-build-contents.ts)
 * - Tool results: one user content per step, exactly one `functionResponse` per call in call order, named by
 *   the call's id; a missing result becomes `{error}`, a result for no call is a 400. Response text is sent as
 *   `{output: text}` / `{error: text}`, never parsed.                         (gemini-build-contents.ts)
 * - Non-object tool arguments in history are sent as `{_raw: text}`.        (gemini-build-contents.ts)
 * - Image/document URLs → `fileData` with a MIME type guessed from the extension (image → image/jpeg,
 *   document → application/pdf when unknown).                                (gemini-mime-type.ts)
 * - Tool schemas and JSON-schema output go as written to the fields that take JSON Schema
 *   (`parametersJsonSchema`, `responseJsonSchema`), `$ref`s inlined and `$schema` removed. (gemini-json-schema.ts)
 * - Reasoning: budgets on 2.5, levels on 3+, exact `budgetTokens` as a budget, `includeThoughts` whenever
 *   reasoning is requested; "off" is the model's minimum where it cannot stop thinking.  (gemini-thinking.ts)
 * - Thought signatures ride inside the tool-call ids handed to clients, with Gemini's own call id; minted ids
 *   are `call_<random>`. On Gemini 3 a step whose first call has no signature gets Google's placeholder.
 *   Reasoning is replayed only when Gemini signed it.        (gemini-tool-call-id.ts, gemini-build-contents.ts)
 * - Finish: `tool-calls` whenever a call was seen anywhere in the reply; RECITATION/LANGUAGE are content
 *   filtering; a blocked prompt is a content-filter finish with no content.  (gemini-map-finish.ts)
 * - Usage: input = prompt − cached (+ server-tool prompt), output = candidates + thoughts. (gemini-map-usage.ts)
 * - Dropped and reported: `user`, `parallel_tool_calls`, `strict`, image `detail`, message `name`, and every
 *   other client protocol's extension (a Gemini client's own fields go as written, but for unknown top-level ones).
 *   Choices and log probabilities go as `candidateCount`, `responseLogprobs` and `logprobs`. (gemini-build-request.ts)
 * - Errors: by HTTP status; API_KEY_INVALID counts as the gateway's credential failing; `RetryInfo.retryDelay`
 *   becomes `retry-after`. A stream that ends without a finish reason is `upstream_bad_response`. (gemini-errors.ts)
 */
import { GatewayError } from '../../canonical/errors.js';
import { hasCacheBreakpoints } from '../../canonical/cache-breakpoints.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from '../types.js';
import {
  headerValue,
  midStreamError,
  streamedReplyEvents,
  UpstreamHttp,
  type UpstreamResponse,
} from '../upstream-http.js';
import { WholeReply } from '../whole-reply.js';
import { gatewayStopSequences, matchStopSequences, withoutStopSequences } from '../gateway-stop-sequences.js';
import { buildGeminiCountTokensRequest, buildGeminiRequest } from './gemini-build-request.js';
import { geminiErrorOf, geminiUpstreamError, parseGeminiErrorBody } from './gemini-errors.js';
import { mapGeminiResponse } from './gemini-map-response.js';
import { GeminiStreamMapper } from './gemini-map-stream.js';
import type { GeminiResponseMapperOptions } from './gemini-response-mapper.js';
import type { GeminiCountTokensResponse, GeminiGenerateContentResponse } from '../../wire/gemini-generate-wire.js';

export interface GeminiProviderOptions {
  /** The bare origin, e.g. `https://generativelanguage.googleapis.com` (a path prefix is kept, for the simulator). */
  baseUrl: string;
  apiKey: string;
  /** Shown in error messages. */
  vendorLabel?: string;
  /** The connection pool to use (shared by credentials with the same base URL); one is made when absent. */
  http?: UpstreamHttp;
}

export class GeminiProvider implements ProviderAdapter {
  readonly vendor = 'gemini' as const;
  private readonly http: UpstreamHttp;
  private readonly headers: Record<string, string>;
  private readonly label: string;

  constructor(options: GeminiProviderOptions) {
    this.http = options.http ?? new UpstreamHttp({ baseUrl: options.baseUrl });
    this.headers = { 'x-goog-api-key': options.apiKey };
    this.label = options.vendorLabel ?? 'Gemini';
  }

  async call({ request, model, signal, trace }: ProviderCall): Promise<ProviderResponse> {
    // Gemini's STOP does not say which stop sequence fired: the gateway matches them over a stream it can cut.
    const stops = gatewayStopSequences(request);
    const upstreamStream = request.stream || stops !== undefined;
    const { body, droppedParameters } = buildGeminiRequest(
      stops === undefined ? request : withoutStopSequences(request),
      model.upstreamModel,
    );
    // Gemini caches prefixes on its own (implicit caching): a breakpoint changes nothing, and is reported as dropped.
    if (hasCacheBreakpoints(request)) droppedParameters.push('cache_control');
    const method = upstreamStream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    const response = await this.http.post(
      modelPath(model.upstreamModel, method),
      this.headers,
      JSON.stringify(body),
      signal,
      upstreamStream,
      trace?.propagationHeaders,
    );
    const upstreamRequestId = headerValue(response.headers, 'x-request-id');
    trace?.attemptAnswered(response.statusCode, upstreamRequestId);
    if (response.statusCode < 200 || response.statusCode >= 300) throw await this.errorFrom(response);
    const mapperOptions: GeminiResponseMapperOptions = {
      vendorLabel: this.label,
      fallbackModel: model.upstreamModel,
      // Gemini 2 bills Google Search grounding per grounded prompt; later models per search query.
      searchesBilledPerPrompt: model.webSearchBilledPerRequest === true,
    };
    if (stops !== undefined)
      return {
        events: matchStopSequences(this.streamEvents(response, mapperOptions), stops),
        droppedParameters,
        upstreamRequestId,
      };
    const events = request.stream
      ? this.streamEvents(response, mapperOptions)
      : this.replyEvents(response, mapperOptions);
    return { events, droppedParameters, upstreamRequestId };
  }

  /** Gemini's own count of the prompt (system text and tools included), for `count_tokens`. */
  async countTokens(request: CanonicalRequest, model: CatalogModel, signal: AbortSignal): Promise<number> {
    const body = buildGeminiCountTokensRequest(request, model.upstreamModel);
    const response = await this.http.post(
      modelPath(model.upstreamModel, 'countTokens'),
      this.headers,
      JSON.stringify(body),
      signal,
    );
    if (response.statusCode < 200 || response.statusCode >= 300) throw await this.errorFrom(response);
    const reply = (await this.readJson(response)) as GeminiCountTokensResponse;
    if (typeof reply.totalTokens !== 'number') {
      throw new GatewayError('upstream_bad_response', `${this.label} sent a token count without totalTokens.`);
    }
    return reply.totalTokens;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  /** A non-stream reply as canonical events, read on first use. */
  private replyEvents(response: UpstreamResponse, options: GeminiResponseMapperOptions): WholeReply {
    return new WholeReply(() => this.readReply(response, options));
  }

  private async readReply(response: UpstreamResponse, options: GeminiResponseMapperOptions): Promise<CanonicalEvent[]> {
    const reply = await this.readJson(response);
    const error = geminiErrorOf(reply);
    if (error !== undefined)
      throw geminiUpstreamError(error, typeof error.code === 'number' ? error.code : 500, this.label);
    return mapGeminiResponse(reply as GeminiGenerateContentResponse, options);
  }

  private streamEvents(
    response: UpstreamResponse,
    options: GeminiResponseMapperOptions,
  ): AsyncIterableIterator<CanonicalEvent> {
    const mapper = new GeminiStreamMapper(options);
    // Gemini has no terminal event: the stream is over when the body ends.
    return streamedReplyEvents(response, this.label, mapper, () => false);
  }

  /** A JSON object body; anything else is the vendor misbehaving. */
  private async readJson(response: UpstreamResponse): Promise<object> {
    let parsed: unknown;
    try {
      parsed = await response.body.json();
    } catch (error) {
      throw error instanceof SyntaxError
        ? new GatewayError('upstream_bad_response', `${this.label} sent a reply that is not valid JSON.`)
        : midStreamError(error, this.label);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new GatewayError('upstream_bad_response', `${this.label} sent a reply that is not a JSON object.`);
    }
    return parsed;
  }

  private async errorFrom(response: UpstreamResponse): Promise<GatewayError> {
    let text = '';
    try {
      text = await response.body.text();
    } catch {
      // The status alone decides when the body cannot be read.
    }
    return geminiUpstreamError(
      parseGeminiErrorBody(text),
      response.statusCode,
      this.label,
      headerValue(response.headers, 'retry-after'),
    );
  }
}

/** `/v1beta/models/{model}:{method}`; the model id is escaped so it cannot change the path. */
function modelPath(upstreamModel: string, method: string): string {
  return `/v1beta/models/${encodeURIComponent(upstreamModel)}:${method}`;
}
