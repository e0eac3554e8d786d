import type { FastifyReply } from 'fastify';
import { GatewayError, toGatewayError } from '../../canonical/errors.js';
import type { CanonicalEvent } from '../../canonical/events.js';
import type { ClientProtocol } from '../../canonical/request.js';
import { emptyUsage, type CanonicalUsage } from '../../canonical/usage.js';
import type { ChatExchange } from '../../pipeline/chat-pipeline.js';
import type { ExchangeTrace } from '../../pipeline/exchange-trace.js';
import { formatUsd } from '../../billing/money.js';
import { nextBatchThen } from '../../streaming/event-batches.js';
import { compactWhileOpen, type Compactable } from '../../streaming/open-stream-compaction.js';
import { SSE_HEADERS, writeToClient } from '../../streaming/sse-response.js';
import { sseComment } from '../../streaming/sse-writer.js';
import { COST_HEADER } from './cost-fields.js';
import { ExchangeAbort, type InFlightAborts } from './exchange-abort.js';
import { droppedParametersAsClientNames } from './dropped-parameter-names.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's trace, set before the route runs when tracing or OTLP metrics are on; absent otherwise. */
    exchangeTrace?: ExchangeTrace;
  }
}

/** What each client protocol's stream encoder provides. */
export interface StreamEncoder {
  encode(event: CanonicalEvent): string;
  /** The closing frames, given the final usage and (once settled) the request's charge. */
  finish(usage: CanonicalUsage, costNano?: bigint): string;
  /** A failure after the headers went out, in the protocol's in-stream error form. */
  error(error: GatewayError): string;
  /**
   * Work that must be done before the closing frames go out (the Responses route stores the response, so a client
   * that reads it right after the last event finds it). Optional.
   */
  beforeFinish?(usage: CanonicalUsage, costNano?: bigint): Promise<void>;
  /** The reply's content type when it is not SSE (Google's JSON-array stream). */
  readonly contentType?: string;
  /** What is written while the upstream is silent, when an SSE comment would break the framing. */
  readonly keepAlive?: string | undefined;
  /** Copies what the encoder keeps of the reply's text flat (`flatCopy`), every few seconds while the stream is open. */
  compact?(): void;
}

/**
 * Aborts the upstream call when the client goes away before the reply is complete, or when a shutdown's grace
 * period ends (the reply then ends with the `shutting_down` error; settlement happens either way).
 */
export function abortOnClientGone(reply: FastifyReply): ExchangeAbort {
  // Not an AbortController: a lighter signal of the same behaviour (exchange-abort.ts says why).
  const controller = new ExchangeAbort();
  const inFlight = reply.server.inFlightAborts as InFlightAborts | undefined;
  // `on`, not `once`: a response closes once, and `once` wraps the listener in one more closure.
  reply.raw.on('close', () => {
    inFlight?.delete(controller);
    if (!reply.raw.writableFinished) controller.abort();
  });
  // Aborted at once when the grace period is already over.
  inFlight?.add(controller);
  return controller;
}

/** What the request was charged, once settled. */
export function settledCharge(exchange: ChatExchange): bigint | undefined {
  const settlement = exchange.settlement();
  return settlement?.settled ? settlement.chargedNano : undefined;
}

/** The charge as a header, for non-stream replies (a stream's headers are gone before it is known). */
export function setCostHeader(reply: FastifyReply, exchange: ChatExchange): void {
  const charge = settledCharge(exchange);
  if (charge !== undefined) reply.header(COST_HEADER, formatUsd(charge));
}

/**
 * The exchange's headers, set on the reply (a stream carries them over with the hooks' ones). `x-request-id`
 * is already there: the app's onRequest hook sets it on every reply. Dropped parameters are named as the client's
 * protocol spells them; `droppedByProtocol` are fields the protocol itself dropped before any vendor saw them.
 */
export function setExchangeHeaders(
  reply: FastifyReply,
  exchange: ChatExchange,
  protocol: ClientProtocol,
  droppedByProtocol: readonly string[] = [],
): void {
  if (exchange.droppedParameters.length > 0 || droppedByProtocol.length > 0) {
    const dropped = droppedParametersAsClientNames(protocol, [...droppedByProtocol, ...exchange.droppedParameters]);
    reply.header('x-tollgate-dropped-params', dropped.join(','));
  }
  // The client asked for more output than the model allows: served with the model's limit, said here.
  if (exchange.clampedMaxOutputTokens !== undefined)
    reply.header(MAX_TOKENS_CLAMPED_HEADER, String(exchange.clampedMaxOutputTokens));
  // The thinking budget did not fit under the output limit: served with this budget (0: without thinking).
  if (exchange.clampedThinkingBudget !== undefined)
    reply.header(THINKING_BUDGET_CLAMPED_HEADER, String(exchange.clampedThinkingBudget));
  if (exchange.upstreamRequestId !== undefined) reply.header('x-upstream-request-id', exchange.upstreamRequestId);
  // The model that served the reply (an alias's target, or a fallback), and the chain's attempts when it fell back.
  reply.header(SERVED_MODEL_HEADER, exchange.model.id);
  if (exchange.attempts.length > 1)
    reply.header(
      MODEL_ATTEMPTS_HEADER,
      exchange.attempts.map((attempt) => `${attempt.model}=${attempt.outcome}`).join(','),
    );
}

/** The public id of the model that served the reply. */
export const SERVED_MODEL_HEADER = 'x-tollgate-model';

/** Every model of a fallback chain tried, in order, as `model=outcome` (`status_503`, `connect`, `timeout`, `ok`). */
export const MODEL_ATTEMPTS_HEADER = 'x-tollgate-model-attempts';

/** Set when the request's output limit was lowered to the model's; its value is the limit the reply was served with. */
export const MAX_TOKENS_CLAMPED_HEADER = 'x-tollgate-max-tokens-clamped';

/** Set when the thinking budget was lowered below the output limit; its value is the budget served, 0 for none. */
export const THINKING_BUDGET_CLAMPED_HEADER = 'x-tollgate-thinking-budget-clamped';

/** What writing one batch came to: written (read on), the stream is over, the client is gone, or an encoder failed. */
type BatchWritten = typeof WRITTEN | typeof STREAM_OVER | typeof CLIENT_GONE | { encodeFailure: unknown };
const WRITTEN = 'written';
const STREAM_OVER = 'over';
const CLIENT_GONE = 'gone';

/** An SSE comment: both SDKs skip it, and proxies that cut idle connections see traffic. */
const KEEP_ALIVE = sseComment('keep-alive');

/**
 * Streams an exchange as SSE: headers at once, each upstream chunk's frames as they come, in one write
 * (backpressure honoured), the closing frames, or the protocol's error form when the upstream fails after the
 * headers went out. While the upstream is silent (a slow first token, a stall before the idle timeout ends the stream), a
 * keep-alive comment goes out every `keepAliveMs` in which nothing else was written.
 */
export async function streamExchange(
  reply: FastifyReply,
  exchange: ChatExchange,
  encoder: StreamEncoder,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  // Hijacked replies skip fastify's header handling: carry over what hooks and the route set (request id, rate
  // limits, the exchange's headers).
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    ...SSE_HEADERS,
    ...(encoder.contentType === undefined ? {} : { 'content-type': encoder.contentType }),
  });
  const keepAliveText = encoder.keepAlive ?? KEEP_ALIVE;
  raw.flushHeaders();
  let usage: CanonicalUsage = emptyUsage();
  let wrote = true;
  // One timer per stream, not one per event: events only set a flag.
  const keepAlive = setInterval(() => {
    if (!wrote && !raw.writableNeedDrain && !raw.destroyed && !raw.writableEnded) raw.write(keepAliveText);
    wrote = false;
  }, exchange.keepAliveMs);
  keepAlive.unref();
  const stopCompacting = encoder.compact === undefined ? undefined : compactWhileOpen(encoder as Compactable);
  const events = exchange.events[Symbol.asyncIterator]();
  /**
   * One upstream chunk's events, encoded into one string and written (one socket write), run by the layers below in
   * the callback that mapped the chunk: no promise hop of its own per chunk. Never throws: an encoder's failure is
   * returned, so that it is not taken for the events' own.
   */
  const writeBatch = (batch: readonly CanonicalEvent[] | undefined): BatchWritten | Promise<BatchWritten> => {
    if (batch === undefined) return STREAM_OVER;
    let text = '';
    try {
      for (const event of batch) {
        if (event.type === 'usage') usage = event.usage;
        text += encoder.encode(event);
      }
    } catch (error) {
      return { encodeFailure: error };
    }
    if (text === '') return WRITTEN;
    wrote = true;
    // A promise only when the client pushes back.
    const written = writeToClient(raw, text);
    if (written === true) return WRITTEN;
    if (written === false) return CLIENT_GONE;
    return written.then((open) => (open ? WRITTEN : CLIENT_GONE));
  };
  try {
    // The events of one upstream network chunk come as one batch: one string, one socket write, as they arrive.
    const outcome = await writeEveryBatch(events, writeBatch);
    if (outcome !== STREAM_OVER) {
      // The client is gone (or an event could not be encoded): close the events, which stops the vendor and settles
      // the reply as disconnected (what for-await did when its body threw), then the error frame for the encoder's.
      await events.return?.();
      if (outcome === CLIENT_GONE) return;
      throw outcome.encodeFailure;
    }
    const charge = settledCharge(exchange);
    if (encoder.beforeFinish !== undefined) await encoder.beforeFinish(usage, charge);
    await writeToClient(raw, encoder.finish(usage, charge));
  } catch (error) {
    await writeToClient(raw, encoder.error(error instanceof GatewayError ? error : toGatewayError(error)));
  } finally {
    clearInterval(keepAlive);
    stopCompacting?.();
    raw.end();
  }
}

/**
 * Writes every batch of `events` with `write` until it returns anything but WRITTEN, which the promise resolves to;
 * an upstream failure (or a throw of `write`) rejects it. The next batch is asked for from the callback that wrote
 * the last one, not after an `await` of it: an await per chunk cost a promise reaction, a microtask and a resumed
 * async function on every chunk of a long stream.
 */
function writeEveryBatch(
  events: AsyncIterator<CanonicalEvent>,
  write: (batch: readonly CanonicalEvent[] | undefined) => BatchWritten | Promise<BatchWritten>,
): Promise<Exclude<BatchWritten, typeof WRITTEN>> {
  return new Promise((resolve, reject) => {
    const onOutcome = (outcome: BatchWritten): void => {
      if (outcome === WRITTEN) nextBatchThen(events, step, reject);
      else resolve(outcome);
    };
    // Never throws (the layers below take it as their own failure otherwise): a throw of `write` rejects instead.
    const step = (batch: readonly CanonicalEvent[] | undefined): void => {
      try {
        const outcome = write(batch);
        if (outcome instanceof Promise) outcome.then(onOutcome, reject);
        else onOutcome(outcome);
      } catch (error) {
        reject(error);
      }
    };
    nextBatchThen(events, step, reject);
  });
}
