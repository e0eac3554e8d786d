import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, toGatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import { emptyUsage, type CanonicalUsage } from '../../canonical/usage.js';
import type { ChatExchange } from '../../pipeline/chat-pipeline.js';
import { formatUsd } from '../../billing/money.js';
import { SSE_HEADERS, writeToClient } from '../../streaming/sse-response.js';
import { sseComment } from '../../streaming/sse-writer.js';
import { COST_HEADER } from './cost-fields.js';

/** What each client protocol's stream encoder provides. */
export interface StreamEncoder {
  encode(event: CanonicalEvent): string;
  /** The closing frames, given the final usage and (once settled) the request's charge. */
  finish(usage: CanonicalUsage, costNano?: bigint): string;
  /** A failure after the headers went out, in the protocol's in-stream error form. */
  error(error: GatewayError): string;
}

/**
 * Aborts the upstream call when the client goes away before the reply is complete, or when a shutdown's grace
 * period ends (the reply then ends with the `shutting_down` error; settlement happens either way).
 */
export function abortOnClientGone(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  const shutdown = reply.server.shutdownSignal as AbortSignal | undefined;
  const cut = () => controller.abort(shutdown?.reason);
  reply.raw.once('close', () => {
    shutdown?.removeEventListener('abort', cut);
    if (!reply.raw.writableFinished) controller.abort();
  });
  if (shutdown?.aborted) cut();
  else shutdown?.addEventListener('abort', cut, { once: true });
  return controller;
}

/** What the request was charged, once settled. */
export function settledCharge(exchange: ChatExchange): bigint | undefined {
  const settlement = exchange.settlement();
  return settlement?.settled ? settlement.chargedNano : undefined;
}

/** The charge as a header, for non-stream replies (a stream's headers are gone before it is known). */
export function costHeader(exchange: ChatExchange): Record<string, string> {
  const charge = settledCharge(exchange);
  return charge === undefined ? {} : { [COST_HEADER]: formatUsd(charge) };
}

export function exchangeHeaders(request: FastifyRequest, exchange: ChatExchange): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': request.id };
  if (exchange.droppedParameters.length > 0) headers['x-tollgate-dropped-params'] = exchange.droppedParameters.join(',');
  if (exchange.upstreamRequestId !== undefined) headers['x-upstream-request-id'] = exchange.upstreamRequestId;
  return headers;
}

/** An SSE comment: both SDKs skip it, and proxies that cut idle connections see traffic. */
const KEEP_ALIVE = sseComment('keep-alive');

/**
 * Streams an exchange as SSE: headers at once, each event's frames as they come (backpressure honoured),
 * the closing frames, or the protocol's error form when the upstream fails after the headers went out.
 * While the upstream is silent (a slow first token, a stall before the idle timeout ends the stream), a
 * keep-alive comment goes out every `keepAliveMs` in which nothing else was written.
 */
export async function streamExchange(
  reply: FastifyReply,
  exchange: ChatExchange,
  encoder: StreamEncoder,
  headers: Record<string, string>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  // Hijacked replies skip fastify's header handling: carry over what hooks set (request id, rate limits).
  raw.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), ...SSE_HEADERS, ...headers });
  raw.flushHeaders();
  let usage: CanonicalUsage = emptyUsage();
  let corked = false;
  const uncork = () => {
    if (!corked) return;
    corked = false;
    raw.uncork();
  };
  let wrote = true;
  // One timer per stream, not one per event: events only set a flag.
  const keepAlive = setInterval(() => {
    if (!wrote && !raw.writableNeedDrain && !raw.destroyed && !raw.writableEnded) raw.write(KEEP_ALIVE);
    wrote = false;
  }, exchange.keepAliveMs);
  keepAlive.unref();
  try {
    for await (const event of exchange.events) {
      if (event.type === 'usage') usage = event.usage;
      const text = encoder.encode(event);
      if (text === '') continue;
      // The events of one upstream chunk arrive in the same tick: cork until the tick ends so they leave in one
      // socket write, without holding any frame back past the moment it was produced.
      if (!corked) {
        corked = true;
        raw.cork();
        process.nextTick(uncork);
      }
      wrote = true;
      if (!(await writeToClient(raw, text))) return;
      // After the finish (and usage) only settlement is left, and when the whole reply came in one upstream chunk
      // it runs in this same tick (SQLite answers synchronously): send the output now, not after the ledger write.
      if (event.type === 'finish' || event.type === 'usage') uncork();
    }
    await writeToClient(raw, encoder.finish(usage, settledCharge(exchange)));
  } catch (error) {
    await writeToClient(raw, encoder.error(error instanceof GatewayError ? error : toGatewayError(error)));
  } finally {
    clearInterval(keepAlive);
    raw.end();
  }
}
