import type { Dispatcher } from 'undici';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { SseMappedStream, type SseEventMapper } from '../streaming/sse-mapped-stream.js';
import { Pool, undiciErrors } from './undici-pool.js';
import { DEFAULT_UPSTREAM_POLICY, type UpstreamTimeouts } from './upstream-settings.js';

export interface UpstreamTarget {
  /** Origin plus optional path prefix, without trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
}

export interface UpstreamHttpOptions {
  /** Connections to the origin at most; unbounded by default (see the constructor). */
  connections?: number;
  /** connect → connectTimeout, first byte → headersTimeout (per request), idle between body chunks → bodyTimeout. */
  timeouts?: UpstreamTimeouts;
}

/**
 * One keep-alive undici Pool per vendor origin. undici's Pool.request is several times faster than the global
 * fetch on this hardware, which matters because every client request crosses here. The timeouts are undici's
 * own (one timer per request, reset as bytes arrive), so the hot path adds no timers of its own.
 */
export class UpstreamHttp {
  private readonly pool: Pool;
  private readonly pathPrefix: string;
  private closing: Promise<void> | undefined;
  private readonly streamFirstByteMs: number;
  private readonly nonStreamFirstByteMs: number;
  /** Request headers with the content type, per adapter headers object: adapters pass the same one on each call. */
  private readonly mergedHeaders = new WeakMap<Record<string, string>, Record<string, string>>();

  constructor(target: UpstreamTarget, options: UpstreamHttpOptions = {}) {
    const url = new URL(target.baseUrl);
    const timeouts = options.timeouts ?? DEFAULT_UPSTREAM_POLICY.timeouts;
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.streamFirstByteMs = timeouts.firstByteMs;
    this.nonStreamFirstByteMs = timeouts.nonStreamMs;
    this.pool = new Pool(url.origin, {
      // Unbounded: a stream holds its connection for its whole length (an agent's can run for minutes), so a cap
      // would queue every request past it behind the longest streams. Operators cap a deployment with maxConcurrent.
      connections: options.connections ?? null,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connectTimeout: timeouts.connectMs,
      headersTimeout: timeouts.firstByteMs,
      bodyTimeout: timeouts.idleMs,
    });
  }

  /**
   * `stream`: the reply is a stream (its headers come at once), not a whole reply (they come when it is done).
   * `traceHeaders`: the attempt's trace context (`traceparent`), only when tracing is on.
   */
  async post(
    path: string,
    headers: Record<string, string>,
    body: string | Buffer,
    signal: AbortSignal,
    stream = false,
    traceHeaders?: Readonly<Record<string, string>>,
  ): Promise<UpstreamResponse> {
    const merged = this.withContentType(headers);
    try {
      const response = await this.pool.request({
        method: 'POST',
        path: this.pathPrefix + path,
        headers: traceHeaders === undefined ? merged : { ...merged, ...traceHeaders },
        // undici keeps the body it was given, and the bytes it makes of a string, until the reply is over: given
        // the bytes, it keeps one copy of the prompt per open stream rather than two.
        body: typeof body === 'string' ? Buffer.from(body) : body,
        signal,
        headersTimeout: stream ? this.streamFirstByteMs : this.nonStreamFirstByteMs,
      });
      return { statusCode: response.statusCode, headers: response.headers, body: response.body };
    } catch (error) {
      throw upstreamConnectionError(error);
    }
  }

  private withContentType(headers: Record<string, string>): Record<string, string> {
    let merged = this.mergedHeaders.get(headers);
    if (merged === undefined) {
      merged = { 'content-type': 'application/json', ...headers };
      this.mergedHeaders.set(headers, merged);
    }
    return merged;
  }

  /** Idempotent: credentials that share a base URL share this pool, and each adapter closes it. */
  close(): Promise<void> {
    this.closing ??= this.pool.close();
    return this.closing;
  }
}

/** A failure to reach the vendor at all, as the gateway error a client should see. */
export function upstreamConnectionError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof undiciErrors.RequestAbortedError) {
    return new GatewayError('upstream_unavailable', 'The request was cancelled.', { cause: error });
  }
  if (
    error instanceof undiciErrors.ConnectTimeoutError ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError
  ) {
    return new GatewayError('upstream_timeout', 'The model provider did not answer in time.', { cause: error });
  }
  return new GatewayError('upstream_unavailable', 'The model provider could not be reached.', { cause: error });
}

/**
 * A failure while reading a reply the vendor had already started: the connection broke or stalled. Said as
 * such, so a client can tell a cut-off reply from a vendor that never answered.
 */
export function midStreamError(error: unknown, vendorLabel: string): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError('upstream_timeout', `${vendorLabel} stopped sending before the reply was complete.`, {
      cause: error,
    });
  }
  return new GatewayError('upstream_bad_response', `${vendorLabel} ended the stream before the reply was complete.`, {
    cause: error,
  });
}

/**
 * A streamed reply's SSE body as canonical events, the same way for every vendor: a failure while reading or
 * mapping becomes a mid-stream error naming the vendor, and the body is released (its connection given back)
 * whether the stream ended, failed or the consumer left. `isComplete` tells when the vendor's terminal event
 * has been mapped.
 */
export function streamedReplyEvents(
  response: UpstreamResponse,
  vendorLabel: string,
  mapper: SseEventMapper<CanonicalEvent>,
  isComplete: () => boolean,
): AsyncIterableIterator<CanonicalEvent> {
  return new SseMappedStream<CanonicalEvent>(response.body, {
    mapper,
    isComplete,
    wrapError: (error) => midStreamError(error, vendorLabel),
    release: () => {
      if (!response.body.destroyed) response.body.destroy();
    },
  });
}

export function headerValue(headers: UpstreamResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
