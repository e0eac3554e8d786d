import type { GatewayError } from '../../canonical/errors.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from '../types.js';
import { headerValue, UpstreamHttp, type UpstreamResponse } from '../upstream-http.js';
import { parseRetryAfter, upstreamError } from '../upstream-errors.js';
import { buildOpenAIRequest } from './openai-build-request.js';
import { openAICompletionEvents, openAIStreamEvents, readOpenAIErrorBody } from './openai-read-reply.js';

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
    const events = request.stream ? openAIStreamEvents(response, this.label) : openAICompletionEvents(response, this.label);
    return { events, droppedParameters, upstreamRequestId };
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private async errorFrom(response: UpstreamResponse): Promise<GatewayError> {
    const { message, vendorCode } = await readOpenAIErrorBody(response);
    return upstreamError({
      vendorLabel: this.label,
      status: response.statusCode,
      message,
      vendorCode,
      retryAfterSeconds: parseRetryAfter(headerValue(response.headers, 'retry-after')),
    });
  }
}
