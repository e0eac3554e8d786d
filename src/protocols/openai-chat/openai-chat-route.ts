import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AuthenticatedKey } from '../../keys/key-service.js';
import { accumulate } from '../../canonical/accumulate.js';
import type { ChatPipeline } from '../../pipeline/chat-pipeline.js';
import type { ExchangeTrace } from '../../pipeline/exchange-trace.js';
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
  app.post('/v1/chat/completions', { config: { protocol: 'openai', rateLimited: true } }, async (request, reply) =>
    serveOpenAIChat(pipeline, {
      body: request.body,
      auth: request.auth!,
      requestId: request.id,
      reply,
      trace: request.exchangeTrace,
      route: '/v1/chat/completions',
    }),
  );
}

/** One chat-completions request, already authenticated and rate-limited by its caller. */
export interface OpenAIChatCall {
  body: unknown;
  auth: AuthenticatedKey;
  requestId: string;
  reply: FastifyReply;
  /** The route named in the usage record. */
  route: string;
  /** The request's trace when OpenTelemetry is on (absent: off, or a call with no client request to trace). */
  trace?: ExchangeTrace | undefined;
}

/**
 * Decodes a chat-completions body, runs it through the pipeline and answers in OpenAI's shape (whole or streamed):
 * the `/v1` route, and the dashboard's playground, which feeds the same pipeline with the account's own standing.
 */
export async function serveOpenAIChat(pipeline: ChatPipeline, call: OpenAIChatCall): Promise<FastifyReply> {
  const { reply } = call;
  const { request: canonical, includeUsage } = decodeOpenAIChatRequest(call.body);
  const abort = abortOnClientGone(reply);
  const exchange = await pipeline.start({
    auth: call.auth,
    request: canonical,
    requestId: call.requestId,
    signal: abort.signal,
    trace: call.trace,
    route: call.route,
  });
  const context = { id: `chatcmpl-${call.requestId}`, model: exchange.model.id };
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
}
