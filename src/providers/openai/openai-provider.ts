import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { decodeSseStream } from '../../streaming/sse-decoder.js';
import type { OpenAIChatCompletion, OpenAIErrorBody } from '../../wire/openai-chat-wire.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from '../types.js';
import { headerValue, upstreamConnectionError, UpstreamHttp, type UpstreamResponse } from '../upstream-http.js';
import { parseRetryAfter, upstreamError } from '../upstream-errors.js';
import { buildOpenAIRequest } from './openai-build-request.js';
import { mapOpenAIResponse } from './openai-map-response.js';
import { OpenAIStreamMapper } from './openai-map-stream.js';

export interface OpenAIProviderOptions {
  /** Base URL ending in /v1, as the OpenAI SDK's OPENAI_BASE_URL. */
  baseUrl: string;
  apiKey: string;
  /** Shown in error messages. */
  vendorLabel?: string;
}

/** The OpenAI Chat Completions adapter (the beta family). */
export class OpenAIProvider implements ProviderAdapter {
  readonly vendor = 'openai' as const;
  private readonly http: UpstreamHttp;
  private readonly headers: Record<string, string>;
  private readonly label: string;

  constructor(options: OpenAIProviderOptions) {
    this.http = new UpstreamHttp({ baseUrl: options.baseUrl });
    this.headers = { authorization: `Bearer ${options.apiKey}` };
    this.label = options.vendorLabel ?? 'OpenAI';
  }

  async call({ request, model, signal }: ProviderCall): Promise<ProviderResponse> {
    const { body, droppedParameters } = buildOpenAIRequest(request, model.upstreamModel);
    const response = await this.http.post('/chat/completions', this.headers, JSON.stringify(body), signal);
    const upstreamRequestId = headerValue(response.headers, 'x-request-id');
    if (response.statusCode < 200 || response.statusCode >= 300) throw await this.errorFrom(response);
    const events = request.stream ? this.streamEvents(response) : this.completionEvents(response);
    return { events, droppedParameters, upstreamRequestId };
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private async *completionEvents(response: UpstreamResponse): AsyncGenerator<CanonicalEvent> {
    let completion: OpenAIChatCompletion;
    try {
      completion = (await response.body.json()) as OpenAIChatCompletion;
    } catch (error) {
      throw error instanceof SyntaxError
        ? new GatewayError('upstream_bad_response', `${this.label} sent a reply that is not valid JSON.`)
        : upstreamConnectionError(error);
    }
    if (!Array.isArray(completion?.choices)) {
      throw new GatewayError('upstream_bad_response', `${this.label} sent a reply without choices.`);
    }
    yield* mapOpenAIResponse(completion);
  }

  private async *streamEvents(response: UpstreamResponse): AsyncGenerator<CanonicalEvent> {
    const mapper = new OpenAIStreamMapper(this.label);
    try {
      for await (const event of decodeSseStream(response.body)) {
        yield* mapper.map(event);
        if (mapper.sawDone) break;
      }
    } catch (error) {
      throw error instanceof GatewayError ? error : upstreamConnectionError(error);
    } finally {
      // Stop reading (and release the connection) whether the stream ended, failed or the consumer left.
      if (!response.body.destroyed) response.body.destroy();
    }
    yield* mapper.end();
  }

  private async errorFrom(response: UpstreamResponse): Promise<GatewayError> {
    let message: string | undefined;
    let vendorCode: string | undefined;
    try {
      const text = await response.body.text();
      const parsed = JSON.parse(text) as Partial<OpenAIErrorBody>;
      message = parsed.error?.message;
      vendorCode = parsed.error?.code ?? parsed.error?.type ?? undefined;
    } catch {
      // A non-JSON error body: the status alone decides.
    }
    return upstreamError({
      vendorLabel: this.label,
      status: response.statusCode,
      message,
      vendorCode,
      retryAfterSeconds: parseRetryAfter(headerValue(response.headers, 'retry-after')),
    });
  }
}
