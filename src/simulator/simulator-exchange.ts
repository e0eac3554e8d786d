/**
 * One request/response pair as the vendor modules see it, and the small HTTP helpers they share. Every
 * wait takes the exchange's signal, which fires when the client goes away or the simulator closes, so no
 * timer outlives either.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { PromptCacheStore } from './prompt-cache/cache-store.js';

export interface Pacing {
  /** Delay before the first token (stream) or added to the generation time (non-stream). */
  firstTokenDelayMs: number;
  /** Delay between stream chunks. */
  chunkDelayMs: number;
}

export interface SimulatorExchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** Path below the vendor prefix, e.g. `/v1/chat/completions` for `/openai/v1/chat/completions`. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** Aborted when the client disconnects or the simulator closes. */
  readonly signal: AbortSignal;
  /** The server's pacing; requests may override it with directives. */
  readonly pacing: Pacing;
  /** Unique per request (not derived from the body): for request-id headers. */
  readonly requestId: string;
  /** Whether `key` may call the simulator (the `apiKeys` option; any non-empty key when none is set). */
  isKeyAccepted(key: string | undefined): boolean;
  /** The vendor API key the request carries (bearer, `x-api-key`, `x-goog-api-key` or `?key=`), for `only-key`. */
  readonly apiKey: string | undefined;
  /** Counts one more request for `key`; returns how many came before it (for `times`). */
  countFault(key: string): number;
  /** The simulator's prompt cache; undefined when it runs without one (`promptCache: false`). */
  readonly promptCache: PromptCacheStore | undefined;
}

/** Largest body read; beyond it the vendor module answers 413. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor() {
    super(`request body larger than ${MAX_BODY_BYTES} bytes`);
  }
}

export async function readBody(exchange: SimulatorExchange): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of exchange.request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLargeError();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export type JsonBody =
  | { kind: 'ok'; raw: string; body: unknown }
  | { kind: 'too-large'; message: string }
  | { kind: 'invalid-json'; message: string };

/** Reads and parses the body; each vendor answers the two failures in its own words. */
export async function readJsonBody(exchange: SimulatorExchange): Promise<JsonBody> {
  let raw: string;
  try {
    raw = await readBody(exchange);
  } catch (error) {
    if (error instanceof BodyTooLargeError) return { kind: 'too-large', message: error.message };
    throw error;
  }
  try {
    return { kind: 'ok', raw, body: JSON.parse(raw) as unknown };
  } catch (error) {
    return { kind: 'invalid-json', message: error instanceof Error ? error.message : String(error) };
  }
}

/** Waits `ms` (no timer at all for 0); rejects with an AbortError when the exchange ends first. */
export async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (ms > 0) await delay(ms, undefined, { signal });
}

/** Waits until the exchange ends: the "stall forever" fault. */
export async function waitForAbort(signal: AbortSignal): Promise<never> {
  signal.throwIfAborted();
  await once(signal, 'abort');
  throw signal.reason;
}

export function sendJson(
  exchange: SimulatorExchange,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  const { response } = exchange;
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  response.end(body);
}

/** Writes `text` and resolves once it has been handed to the socket (honours back-pressure). */
export async function writeFlushed(exchange: SimulatorExchange, text: string): Promise<void> {
  exchange.signal.throwIfAborted();
  await new Promise<void>((resolve, reject) => {
    exchange.response.write(text, (error) => (error ? reject(error) : resolve()));
  });
}

/** Drops the connection without a proper end (the "disconnect" faults). */
export function destroyConnection(exchange: SimulatorExchange): void {
  exchange.request.socket.destroy();
}
