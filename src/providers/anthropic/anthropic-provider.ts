/**
 * The Anthropic Messages adapter (the alpha family): `POST {baseUrl}/v1/messages` and `/v1/messages/count_tokens`.
 *
 * Policies (docs/protocols/translation.md, its sections cited below):
 * - System: top-level canonical system blocks → `system` text blocks. A system message in mid-conversation stays in
 *   place as Anthropic's own `{role: "system"}` message (`SystemMessageParam`), never merged into a turn.
 * - Messages: empty/whitespace text dropped, a message left empty dropped
 *   (docs/protocols/translation.md#empty-text-blocks); same-role runs merged; in a user turn every tool_result comes
 *   first (docs/protocols/translation.md#one-user-message-per-tool-turn); tool ids rewritten to `^[a-zA-Z0-9_-]+$`
 *   alike in calls and results (docs/protocols/translation.md#tool-ids-anthropic-refuses); participant `name` and image
 *   `detail` have no Anthropic field and are left out.
 * - Content: base64 images must be jpeg/png/gif/webp (`image/jpg` is read as jpeg) or the request is a 400 naming the
 *   part; a PDF sent as an image data URL becomes a `document`. Tool arguments: `""` → `{}`, anything but a JSON
 *   object → 400 naming the message.
 * - Reasoning replay: only Anthropic-signed thinking (and redacted thinking not tagged as foreign) is sent back, and
 *   only when thinking is on for this request (docs/protocols/translation.md#signed-thinking-in-tool-loops,
 *   #reasoning-replayed-only-to-its-vendor).
 * - Thinking: `budgetTokens` as given, else effort buckets minimal/low 1024, medium 2048, high 4096, xhigh 8192,
 *   max 16384; effort `none` or `enabled: false` → `{type: "disabled"}`; an unknown effort leaves thinking off and
 *   is reported. Thinking is turned off (and `thinking`/`reasoning_effort` reported) when JSON mode needs a forced
 *   tool, or when the last tool-use turn of the history lacks its signed thinking
 *   (docs/protocols/translation.md#signed-thinking-in-tool-loops). With thinking on: `temperature` (reported unless it
 *   was 1), `top_k` and a `top_p` below 0.95 are dropped, and a forced `tool_choice` is downgraded to `auto`
 *   (docs/protocols/translation.md#forced-tool-use-with-thinking); each is reported in `droppedParameters`.
 * - `max_tokens`: the client's value capped at the model maximum; when absent, min(model maximum, 8192). With thinking
 *   it is raised to budget + 4096 when not above the budget (the budget is lowered instead if the model maximum
 *   forbids it).
 * - Sampling: temperature clamped to ≤ 1 silently; top_p, top_k, stop (empty/whitespace sequences dropped and
 *   `stop` reported) forwarded; presence/frequency penalty and seed dropped and reported. `user` → metadata.user_id.
 * - Tools: `input_schema` defaults to `{type: object, properties: {}}`, a missing root type becomes `object`, another
 *   root type is a 400; `strict: true` forwarded. tool_choice auto/none/required/tool → auto/none/any/tool;
 *   `parallelToolCalls: false` → `disable_parallel_tool_use` (never on `none`); no tools → no tool_choice.
 * - response_format json_object/json_schema: a JSON-mode tool (named after the schema, `json_response` for
 *   json_object) forced with tool_choice (`any` beside the client's own tools); its input comes back as the reply's
 *   text and the finish as `end_turn`/stop. Not applied when the client forces a tool call (the turn is a call).
 * - Extensions: from an Anthropic client, `anthropicBeta` becomes the `anthropic-beta` header and other fields are
 *   sent as-is unless the adapter built that field; from any other client they are dropped and reported.
 * - Replies: block ids `b<index>`; empty text blocks and server-tool blocks are not relayed; a tool call without
 *   argument deltas gets its start input (`{}`) as one delta; finish and usage are emitted at `message_stop`.
 * - Errors: non-2xx → `upstreamError` (status decides; 529 → upstream_unavailable) with `retry-after`, or on a 429
 *   without it the `anthropic-ratelimit-requests-reset` time; `event: error` → the gateway error of its type; a
 *   stream ending (or reset) before `message_stop` → upstream_bad_response.
 * - Prompt caching (docs/prompt-caching.md): every canonical breakpoint becomes `cache_control` on the block or tool
 *   that carries it (5 minutes as `{type: "ephemeral"}`, 1 hour with `ttl: "1h"`), the top-level one at the top level.
 *   For a client that could not ask (Responses, Gemini) or did not (an OpenAI chat client without breakpoints), on a
 *   model with `automaticCaching` and a prompt of at least its minimum cacheable length, the gateway places 5-minute
 *   breakpoints on the last system block (else the last tool) and on the last block of the last user turn.
 * - count_tokens: the Messages body reduced to model/messages/system/tools/tool_choice/thinking, same headers.
 */
import { loadTokenizer } from '../../canonical/count-tokens.js';
import { GatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages-wire.js';
import type { ProviderAdapter, ProviderCall, ProviderResponse } from '../types.js';
import {
  headerValue,
  streamedReplyEvents,
  upstreamConnectionError,
  UpstreamHttp,
  type UpstreamResponse,
} from '../upstream-http.js';
import { sameFormatClientBody, vendorJsonBody } from '../vendor-json-body.js';
import { buildAnthropicCountTokensRequest, buildAnthropicRequest } from './anthropic-build-request.js';
import { anthropicHttpError } from './anthropic-map-error.js';
import { mapAnthropicMessage, type AnthropicMappingOptions } from './anthropic-map-response.js';
import { AnthropicStreamMapper } from './anthropic-map-stream.js';
import { automaticCacheCandidate } from './anthropic-prompt-cache.js';
import { WholeReply } from '../whole-reply.js';

export interface AnthropicProviderOptions {
  /** Origin, optionally with a path prefix, without `/v1`: `https://api.anthropic.com` (as ANTHROPIC_BASE_URL). */
  baseUrl: string;
  apiKey: string;
  /** Shown in error messages. */
  vendorLabel?: string;
  /** The connection pool to use (shared by credentials with the same base URL); one is made when absent. */
  http?: UpstreamHttp;
}

export const ANTHROPIC_VERSION = '2023-06-01';

export class AnthropicProvider implements ProviderAdapter {
  readonly vendor = 'anthropic' as const;
  private readonly http: UpstreamHttp;
  private readonly headers: Record<string, string>;
  private readonly label: string;

  constructor(options: AnthropicProviderOptions) {
    this.http = options.http ?? new UpstreamHttp({ baseUrl: options.baseUrl });
    this.headers = { 'x-api-key': options.apiKey, 'anthropic-version': ANTHROPIC_VERSION };
    this.label = options.vendorLabel ?? 'Anthropic';
  }

  async call({ request, model, signal, trace }: ProviderCall): Promise<ProviderResponse> {
    // Whether to place the gateway's breakpoints takes a token count; the tokenizer loads without blocking the loop.
    if (automaticCacheCandidate(request, model)) await loadTokenizer();
    const { body, droppedParameters, betaHeader, betaQuery, jsonToolName } = buildAnthropicRequest(request, model);
    const path = betaQuery ? '/v1/messages?beta=true' : '/v1/messages';
    const response = await this.http.post(
      path,
      this.headersWith(betaHeader),
      vendorJsonBody(body, sameFormatClientBody(request, 'anthropic-messages')),
      signal,
      request.stream,
      trace?.propagationHeaders,
    );
    const upstreamRequestId = headerValue(response.headers, 'request-id');
    trace?.attemptAnswered(response.statusCode, upstreamRequestId);
    if (response.statusCode < 200 || response.statusCode >= 300) throw await anthropicHttpError(this.label, response);
    const options: AnthropicMappingOptions = { created: Math.floor(Date.now() / 1000), jsonToolName };
    const events = request.stream ? this.streamEvents(response, options) : this.messageEvents(response, options);
    return { events, droppedParameters, upstreamRequestId };
  }

  /** Input tokens of a request as Anthropic counts them (`/v1/messages/count_tokens`). */
  async countTokens(request: CanonicalRequest, model: CatalogModel, signal: AbortSignal): Promise<number> {
    const { body, betaHeader, betaQuery } = buildAnthropicCountTokensRequest(request, model);
    const path = betaQuery ? '/v1/messages/count_tokens?beta=true' : '/v1/messages/count_tokens';
    const response = await this.http.post(path, this.headersWith(betaHeader), JSON.stringify(body), signal);
    if (response.statusCode < 200 || response.statusCode >= 300) throw await anthropicHttpError(this.label, response);
    const reply = await this.readJson(response);
    const count = (reply as { input_tokens?: unknown } | null)?.input_tokens;
    if (typeof count !== 'number' || !Number.isFinite(count)) {
      throw new GatewayError('upstream_bad_response', `${this.label} sent a token count without 'input_tokens'.`);
    }
    return count;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  private headersWith(betaHeader: string | undefined): Record<string, string> {
    return betaHeader === undefined ? this.headers : { ...this.headers, 'anthropic-beta': betaHeader };
  }

  private messageEvents(response: UpstreamResponse, options: AnthropicMappingOptions): WholeReply {
    return new WholeReply(() => this.readMessage(response, options));
  }

  private async readMessage(response: UpstreamResponse, options: AnthropicMappingOptions): Promise<CanonicalEvent[]> {
    const message = (await this.readJson(response)) as AnthropicMessage | null;
    if (
      message === null ||
      typeof message !== 'object' ||
      message.type !== 'message' ||
      !Array.isArray(message.content)
    ) {
      throw new GatewayError('upstream_bad_response', `${this.label} sent a reply that is not a message.`);
    }
    return mapAnthropicMessage(message, options);
  }

  private streamEvents(
    response: UpstreamResponse,
    options: AnthropicMappingOptions,
  ): AsyncIterableIterator<CanonicalEvent> {
    const mapper = new AnthropicStreamMapper(this.label, options);
    // `message_stop` is the terminal event: there is no [DONE] and nothing after it matters.
    return streamedReplyEvents(response, this.label, mapper, () => mapper.complete);
  }

  private async readJson(response: UpstreamResponse): Promise<unknown> {
    try {
      return await response.body.json();
    } catch (error) {
      throw error instanceof SyntaxError
        ? new GatewayError('upstream_bad_response', `${this.label} sent a reply that is not valid JSON.`)
        : upstreamConnectionError(error);
    }
  }
}
