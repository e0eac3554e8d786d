import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accumulate } from '../../canonical/accumulate.js';
import type { ChatPipeline } from '../../pipeline/chat-pipeline.js';
import {
  abortOnClientGone,
  setCostHeader,
  setExchangeHeaders,
  settledCharge,
  streamExchange,
} from '../shared/reply-exchange.js';
import {
  decodeAnthropicCountTokensRequest,
  decodeAnthropicMessagesRequest,
  type AnthropicRequestFlags,
} from './anthropic-decode-request.js';
import { encodeAnthropicResponse, type AnthropicResponseContext } from './anthropic-encode-response.js';
import { AnthropicStreamEncoder } from './anthropic-encode-stream.js';

/**
 * What the request says outside its body: `anthropic-beta` (one header with commas, or the header repeated) and the
 * `?beta=true` flag every `client.beta.messages` call adds.
 */
function requestFlags(request: FastifyRequest): AnthropicRequestFlags {
  const header = request.headers['anthropic-beta'];
  const query = request.query as Record<string, unknown> | undefined;
  return { anthropicBeta: Array.isArray(header) ? header.join(',') : header, betaQuery: query?.beta === 'true' };
}

/** `POST /v1/messages` (Anthropic Messages compatible) and `POST /v1/messages/count_tokens`, any model. */
export function registerAnthropicMessagesRoutes(app: FastifyInstance, pipeline: ChatPipeline): void {
  app.post('/v1/messages', { config: { protocol: 'anthropic', rateLimited: true } }, async (request, reply) => {
    const canonical = decodeAnthropicMessagesRequest(request.body, requestFlags(request));
    const abort = abortOnClientGone(reply);
    const exchange = await pipeline.start({
      auth: request.auth!,
      request: canonical,
      requestId: request.id,
      signal: abort.signal,
      trace: request.exchangeTrace,
      route: '/v1/messages',
      countInputAtStart: true,
    });
    const context: AnthropicResponseContext = {
      id: `msg_${request.id.slice('req_'.length)}`,
      model: exchange.model.id,
      vendor: exchange.model.vendor,
      promptTokens: exchange.inputTokensAtStart,
    };
    if (!canonical.stream) {
      const response = await accumulate(exchange.events);
      // Set only on success, as before: an error reply carries the hooks' headers alone.
      setExchangeHeaders(reply, exchange, 'anthropic-messages');
      reply.header('request-id', request.id);
      setCostHeader(reply, exchange);
      return reply.send(encodeAnthropicResponse(response, context, settledCharge(exchange)));
    }
    setExchangeHeaders(reply, exchange, 'anthropic-messages');
    reply.header('request-id', request.id);
    await streamExchange(reply, exchange, new AnthropicStreamEncoder(context));
    return reply;
  });

  app.post(
    '/v1/messages/count_tokens',
    { config: { protocol: 'anthropic', scope: 'models:use' } },
    async (request, reply) => {
      const canonical = decodeAnthropicCountTokensRequest(request.body, requestFlags(request));
      const inputTokens = await pipeline.countInputTokens(canonical, AbortSignal.timeout(30_000), request.auth!);
      // As on every Anthropic reply (errors get it where they are rendered).
      reply.header('request-id', request.id);
      return { input_tokens: inputTokens };
    },
  );
}
