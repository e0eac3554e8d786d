import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accumulate } from '../../canonical/accumulate.js';
import { GatewayError, toGatewayError } from '../../canonical/errors.js';
import { emptyUsage, type CanonicalUsage } from '../../canonical/usage.js';
import type { ChatExchange, ChatPipeline } from '../../pipeline/chat-pipeline.js';
import { SSE_HEADERS, writeToClient } from '../../streaming/sse-response.js';
import { decodeOpenAIChatRequest } from './openai-decode-request.js';
import { encodeOpenAIResponse } from './openai-encode-response.js';
import { OpenAIChatStreamEncoder } from './openai-encode-stream.js';

/** `POST /v1/chat/completions`: OpenAI chat-completions compatible, any model of the catalog. */
export function registerOpenAIChatRoute(app: FastifyInstance, pipeline: ChatPipeline): void {
  app.post('/v1/chat/completions', { config: { protocol: 'openai' } }, async (request, reply) => {
    const { request: canonical, includeUsage } = decodeOpenAIChatRequest(request.body);
    const abort = abortOnClientGone(reply);
    const exchange = await pipeline.start({ auth: request.auth!, request: canonical, requestId: request.id, signal: abort.signal });
    const headers = exchangeHeaders(request, exchange);
    const context = { id: `chatcmpl-${request.id}`, model: exchange.model.id };
    if (!canonical.stream) {
      const response = await accumulate(exchange.events);
      return reply.headers(headers).send(encodeOpenAIResponse(response, context));
    }
    await streamReply(reply, exchange, new OpenAIChatStreamEncoder(context, includeUsage), headers);
    return reply;
  });
}

function exchangeHeaders(request: FastifyRequest, exchange: ChatExchange): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': request.id };
  if (exchange.droppedParameters.length > 0) headers['x-tollgate-dropped-params'] = exchange.droppedParameters.join(',');
  if (exchange.upstreamRequestId !== undefined) headers['x-upstream-request-id'] = exchange.upstreamRequestId;
  return headers;
}

/** Aborts the upstream call when the client goes away before the reply is complete. */
function abortOnClientGone(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller;
}

async function streamReply(
  reply: FastifyReply,
  exchange: ChatExchange,
  encoder: OpenAIChatStreamEncoder,
  headers: Record<string, string>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, { ...SSE_HEADERS, ...headers });
  raw.flushHeaders();
  let usage: CanonicalUsage = emptyUsage();
  try {
    for await (const event of exchange.events) {
      if (event.type === 'usage') usage = event.usage;
      if (!(await writeToClient(raw, encoder.encode(event)))) return;
    }
    await writeToClient(raw, encoder.end(usage));
  } catch (error) {
    // Headers are gone: the failure travels in the stream, in the shape the client's SDK raises.
    await writeToClient(raw, encoder.error(error instanceof GatewayError ? error : toGatewayError(error)));
  } finally {
    raw.end();
  }
}
