import { hasCacheBreakpoints } from '../../canonical/cache-breakpoints.js';
import { budgetedTextCounter, loadTokenizer } from '../../canonical/count-tokens.js';
import type { GatewayError } from '../../canonical/errors.js';
import type { CanonicalRequest, VendorName } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import { countChatPromptTokens, type CountableChatRequest } from '../../wire/openai-prompt-tokens.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from '../types.js';
import { headerValue, UpstreamHttp, type UpstreamResponse } from '../upstream-http.js';
import { parseRetryAfter, type UpstreamErrorDetails } from '../upstream-errors.js';
import { gatewayStopSequences, matchStopSequences, withoutStopSequences } from '../gateway-stop-sequences.js';
import { sameFormatClientBody, vendorJsonBody } from '../vendor-json-body.js';
import type { ConversationHint } from './openai-build-request.js';
import {
  openAICompletionEvents,
  openAIStreamEvents,
  readOpenAIErrorBody,
  type OpenAIReplyOptions,
} from './openai-read-reply.js';

export interface ProviderEndpointOptions {
  /** The vendor's base URL, as its official SDK takes it (a path prefix such as a simulator's is kept). */
  baseUrl: string;
  apiKey: string;
  /** Shown in error messages. */
  vendorLabel?: string;
  /** The connection pool to use (shared by credentials with the same base URL); one is made when absent. */
  http?: UpstreamHttp;
}

/** What differs between vendors that speak the OpenAI chat-completions dialect. */
export interface OpenAIDialect {
  vendor: VendorName;
  defaultLabel: string;
  buildRequest(
    request: CanonicalRequest,
    upstreamModel: string,
    conversation?: ConversationHint,
  ): { body: Record<string, unknown>; droppedParameters: string[] };
  /** The vendor's model for this request, where it is not always the catalog's `upstreamModel`. */
  upstreamModel?(request: CanonicalRequest, model: CatalogModel): string;
  /** How the reply is read beyond the common format (a web search's citations and cost). */
  replyOptions?(request: CanonicalRequest): OpenAIReplyOptions;
  /** Response headers that may carry the vendor's request id, in order of preference. */
  requestIdHeaders: readonly string[];
  mapError(details: UpstreamErrorDetails): GatewayError;
}

/**
 * An adapter for a vendor speaking the OpenAI chat-completions wire format (OpenAI itself, DeepSeek): Bearer
 * auth, POST `/chat/completions`, replies read by the OpenAI mappers. Each vendor supplies its dialect.
 */
export class OpenAICompatibleProvider implements ProviderAdapter {
  readonly vendor: VendorName;
  /** `countTokens` runs here, without a call: these vendors have no counting endpoint but publish their recipe. */
  readonly countsLocally = true;
  private readonly http: UpstreamHttp;
  private readonly headers: Record<string, string>;
  private readonly label: string;

  constructor(
    options: ProviderEndpointOptions,
    private readonly dialect: OpenAIDialect,
  ) {
    this.vendor = dialect.vendor;
    this.http = options.http ?? new UpstreamHttp({ baseUrl: options.baseUrl });
    this.headers = { authorization: `Bearer ${options.apiKey}` };
    this.label = options.vendorLabel ?? dialect.defaultLabel;
  }

  async call(call: ProviderCall): Promise<ProviderResponse> {
    const { request, model, signal, trace } = call;
    // Stop sequences are matched here, over a streamed reply the gateway can cut at the match (see
    // gateway-stop-sequences.ts): the vendor would stop without saying which one.
    const stops = gatewayStopSequences(request);
    const upstreamStream = request.stream || stops !== undefined;
    const sent = stops === undefined ? request : { ...withoutStopSequences(request), stream: true };
    // Built before any I/O: a request the vendor cannot take fails without reaching it.
    const { body, droppedParameters } = this.dialect.buildRequest(sent, this.upstreamModel(request, model), call);
    // These vendors cache prefixes on their own: a breakpoint changes nothing there, and is reported as dropped.
    if (hasCacheBreakpoints(request)) droppedParameters.push('cache_control');
    const response = await this.http.post(
      '/chat/completions',
      this.headers,
      vendorJsonBody(body, sameFormatClientBody(sent, 'openai-chat')),
      signal,
      upstreamStream,
      trace?.propagationHeaders,
    );
    const upstreamRequestId = this.requestId(response);
    trace?.attemptAnswered(response.statusCode, upstreamRequestId);
    if (response.statusCode < 200 || response.statusCode >= 300) throw await this.errorFrom(response);
    const reply = this.dialect.replyOptions?.(request) ?? {};
    if (stops !== undefined)
      return {
        events: matchStopSequences(openAIStreamEvents(response, this.label, reply), stops),
        droppedParameters,
        upstreamRequestId,
      };
    const events = request.stream
      ? openAIStreamEvents(response, this.label, reply)
      : openAICompletionEvents(response, this.label, reply);
    return { events, droppedParameters, upstreamRequestId };
  }

  /**
   * The prompt's tokens by OpenAI's published recipe, over the very body this adapter would send: the count the
   * vendor bills the request with (the simulator reports exactly this; the real vendors' billing follows the same
   * recipe), so `count_tokens` agrees with the charge.
   */
  async countTokens(request: CanonicalRequest, model: CatalogModel): Promise<number> {
    const { body } = this.dialect.buildRequest({ ...request, stream: false }, this.upstreamModel(request, model));
    await loadTokenizer();
    // One budget for the whole prompt, as the simulator counts it: exact up to it, extrapolated beyond.
    return countChatPromptTokens(body as unknown as CountableChatRequest, budgetedTextCounter());
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private upstreamModel(request: CanonicalRequest, model: CatalogModel): string {
    return this.dialect.upstreamModel?.(request, model) ?? model.upstreamModel;
  }

  private requestId(response: UpstreamResponse): string | undefined {
    for (const name of this.dialect.requestIdHeaders) {
      const value = headerValue(response.headers, name);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  private async errorFrom(response: UpstreamResponse): Promise<GatewayError> {
    const { message, vendorCode } = await readOpenAIErrorBody(response);
    return this.dialect.mapError({
      vendorLabel: this.label,
      status: response.statusCode,
      message,
      vendorCode,
      retryAfterSeconds: parseRetryAfter(headerValue(response.headers, 'retry-after')),
    });
  }
}
