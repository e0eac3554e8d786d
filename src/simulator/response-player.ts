/**
 * Plays a vendor's prepared response onto the wire with the request's pacing and fault applied. Vendor
 * modules only build bodies and frames (and their error shape); when and how those bytes go out — delays,
 * stalls, cut connections, broken frames — is decided here once for every vendor.
 */
import { SSE_HEADERS } from '../streaming/sse-response.js';
import type { SimulatorDirectives } from './fault-directives.js';
import {
  destroyConnection,
  sendJson,
  sleep,
  waitForAbort,
  writeFlushed,
  type Pacing,
  type SimulatorExchange,
} from './simulator-exchange.js';

/** A vendor's rendering of an error status: the body and any headers it sends with it. */
export type VendorErrorRenderer = (status: number) => { body: string; headers?: Record<string, string> };

export interface PlayPlan {
  directives: SimulatorDirectives;
  /** The vendor's error shape, for the `error` and `rate-limit` faults. */
  renderError: VendorErrorRenderer;
  /** Headers sent with a successful response (request ids and the like). */
  headers: Record<string, string>;
}

/** The frames of one streamed reply, already formatted as SSE text. */
export interface StreamScript {
  /** Sent with the headers, before the time to first token (DeepSeek's `: keep-alive` while it queues). */
  preamble?: string;
  /** Defaults to SSE; Gemini's `streamGenerateContent` without `alt=sse` streams a JSON array instead. */
  contentType?: string;
  /** Sent together with the first content frame, after the time to first token. */
  head: string[];
  /** One frame per reply piece; `chunk-delay` separates them and faults count them. */
  content: string[];
  /** Finish, usage and end-of-stream frames. */
  tail: string[];
  /** A frame that is not valid for the vendor (the `malformed-chunk` fault). */
  malformedFrame: string;
  /** The vendor's in-stream error event for `status` (the `error` fault with `after`). */
  errorFrame(status: number): string;
}

const DEFAULT_STATUS = 500;
const DEFAULT_RETRY_AFTER_SECONDS = 1;
const DEFAULT_AFTER_CHUNKS = 2;
const DEFAULT_DELAY_MS = 1000;

export function effectivePacing(base: Pacing, directives: SimulatorDirectives): Pacing {
  return {
    firstTokenDelayMs: directives.ttftMs ?? base.firstTokenDelayMs,
    chunkDelayMs: directives.chunkDelayMs ?? base.chunkDelayMs,
  };
}

/**
 * The directives as they apply to this request: without their fault when `only-key` names another key, or
 * when `times` requests with the same directive already had it.
 */
function applicable(exchange: SimulatorExchange, directives: SimulatorDirectives): SimulatorDirectives {
  if (directives.fault === undefined) return directives;
  if (
    directives.onlyKeys !== undefined &&
    (exchange.apiKey === undefined || !directives.onlyKeys.includes(exchange.apiKey))
  ) {
    return { ...directives, fault: undefined };
  }
  if (
    directives.times !== undefined &&
    directives.faultKey !== undefined &&
    exchange.countFault(directives.faultKey) >= directives.times
  ) {
    return { ...directives, fault: undefined };
  }
  return directives;
}

async function pause(exchange: SimulatorExchange, delayMs: number | 'forever' | undefined): Promise<void> {
  const ms = delayMs ?? DEFAULT_DELAY_MS;
  if (ms === 'forever') await waitForAbort(exchange.signal);
  else await sleep(ms, exchange.signal);
}

/**
 * Faults answered before any success byte: the vendor error (unless `error` is meant to arrive mid-stream)
 * and the rate limit. Returns true when the response has been sent.
 */
async function playLeadingFaults(
  exchange: SimulatorExchange,
  directives: SimulatorDirectives,
  plan: PlayPlan,
  midStreamAllowed: boolean,
): Promise<boolean> {
  if (directives.fault === 'slow-first-byte') await pause(exchange, directives.delayMs);
  if (directives.fault === 'error' && !(midStreamAllowed && directives.afterChunks !== undefined)) {
    const status = directives.status ?? DEFAULT_STATUS;
    const rendered = plan.renderError(status);
    sendJson(exchange, status, rendered.body, { ...plan.headers, ...rendered.headers });
    return true;
  }
  if (directives.fault === 'rate-limit') {
    const rendered = plan.renderError(429);
    const retryAfter = String(directives.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS);
    sendJson(exchange, 429, rendered.body, { ...plan.headers, ...rendered.headers, 'retry-after': retryAfter });
    return true;
  }
  return false;
}

/** A non-stream reply; `pieceCount` paces it like the stream it would have been. */
export async function playJson(
  exchange: SimulatorExchange,
  body: string,
  pieceCount: number,
  plan: PlayPlan,
): Promise<void> {
  const directives = applicable(exchange, plan.directives);
  if (await playLeadingFaults(exchange, directives, plan, false)) return;
  const pacing = effectivePacing(exchange.pacing, directives);
  await sleep(pacing.firstTokenDelayMs + pacing.chunkDelayMs * Math.max(0, pieceCount - 1), exchange.signal);
  switch (directives.fault) {
    case 'disconnect-mid-stream':
      destroyConnection(exchange);
      return;
    case 'stall-mid-stream':
      exchange.response.writeHead(200, { 'content-type': 'application/json', ...plan.headers });
      exchange.response.flushHeaders();
      await pause(exchange, directives.delayMs);
      exchange.response.end(body);
      return;
    case 'malformed-chunk':
      sendJson(exchange, 200, body.slice(0, Math.floor(body.length / 2)), plan.headers);
      return;
    default:
      sendJson(exchange, 200, body, plan.headers);
  }
}

/**
 * A streamed reply. Frames that are due at the same moment go out in one write: with no chunk delay the
 * whole reply is one write, which keeps the simulator cheap as a benchmark upstream.
 */
export async function playStream(exchange: SimulatorExchange, script: StreamScript, plan: PlayPlan): Promise<void> {
  const directives = applicable(exchange, plan.directives);
  if (await playLeadingFaults(exchange, directives, plan, true)) return;
  const pacing = effectivePacing(exchange.pacing, directives);
  const { response, signal } = exchange;
  const contentType = script.contentType === undefined ? {} : { 'content-type': script.contentType };
  response.writeHead(200, { ...SSE_HEADERS, ...contentType, ...plan.headers });
  if (script.preamble === undefined) response.flushHeaders();
  else await writeFlushed(exchange, script.preamble);
  await sleep(pacing.firstTokenDelayMs, signal);

  // A reply shorter than `after` still gets its fault, just before the finish frames.
  const faultAt =
    directives.fault === undefined
      ? -1
      : Math.min(directives.afterChunks ?? DEFAULT_AFTER_CHUNKS, script.content.length);
  let pending = script.head.join('');
  for (let index = 0; index <= script.content.length; index++) {
    if (index === faultAt) {
      // `pending` holds the frames sent before the fault; they must reach the client first.
      switch (directives.fault) {
        case 'disconnect-mid-stream':
          await writeFlushed(exchange, pending);
          destroyConnection(exchange);
          return;
        case 'stall-mid-stream':
          await writeFlushed(exchange, pending);
          pending = '';
          await pause(exchange, directives.delayMs);
          break;
        case 'malformed-chunk':
          pending += script.malformedFrame;
          break;
        case 'error':
          response.end(pending + script.errorFrame(directives.status ?? DEFAULT_STATUS));
          return;
        default:
          break; // leading faults were handled before the stream started
      }
    }
    const frame = script.content[index];
    if (frame === undefined) break;
    if (index > 0 && pacing.chunkDelayMs > 0) {
      if (pending.length > 0) await writeFlushed(exchange, pending);
      pending = '';
      await sleep(pacing.chunkDelayMs, signal);
    }
    pending += frame;
  }
  response.end(pending + script.tail.join(''));
}
