import type { FastifyInstance } from 'fastify';
import { accumulate } from '../../canonical/accumulate.js';
import type { ChatPipeline } from '../../pipeline/chat-pipeline.js';
import {
  abortOnClientGone,
  setCostHeader,
  setExchangeHeaders,
  settledCharge,
  streamExchange,
} from '../shared/reply-exchange.js';
import { decodeOpenAIChatRequest } from './openai-decode-request.js';
import { encodeOpenAIResponse } from './openai-encode-response.js';
import { OpenAIChatStreamEncoder } from './openai-encode-stream.js';

/** `POST /v1/chat/completions`: OpenAI chat-completions compatible, any model of the catalog. */
export function registerOpenAIChatRoute(app: FastifyInstance, pipeline: ChatPipeline): void {
  app.post('/v1/chat/completions', { config: { protocol: 'openai', rateLimited: true } }, async (request, reply) => {
    const { request: canonical, includeUsage } = decodeOpenAIChatRequest(request.body);
    const abort = abortOnClientGone(reply);
    const exchange = await pipeline.start({
      auth: request.auth!,
      request: canonical,
      requestId: request.id,
      signal: abort.signal,
      trace: request.exchangeTrace,
      route: '/v1/chat/completions',
    });
    const context = { id: `chatcmpl-${request.id}`, model: exchange.model.id };
    if (!canonical.stream) {
      const response = await accumulate(exchange.events);
      // Set only on success, as before: an error reply carries the hooks' headers alone.
      setExchangeHeaders(reply, exchange, 'openai-chat');
      setCostHeader(reply, exchange);
      return reply.send(encodeOpenAIResponse(response, context, settledCharge(exchange)));
    }
    setExchangeHeaders(reply, exchange, 'openai-chat');
    await streamExchange(reply, exchange, new OpenAIChatStreamEncoder(context, includeUsage));
    return reply;
  });
}
