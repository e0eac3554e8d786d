/**
 * The offline vendor simulator: a plain `node:http` server on loopback that speaks the vendors' wire
 * protocols, for tests, the demo mode and `tollgate simulator`. This module only routes by path prefix and
 * owns the lifecycle; each vendor's protocol lives in its own module (see `vendor-registry.ts`).
 *
 *   /openai/v1/...   OpenAI Chat Completions (also reachable as /v1/..., the path OpenAI itself uses)
 *   /anthropic/v1/messages[/count_tokens]                  Anthropic Messages
 *   /gemini/v1beta/models/{model}:generateContent | :streamGenerateContent | :countTokens   Gemini
 *   /deepseek/chat/completions (and /deepseek/v1/...)      DeepSeek
 *   /health          {"status":"ok"}
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VendorName } from '../canonical/request.js';
import { PromptCacheStore, type PromptCacheStoreOptions } from './prompt-cache/cache-store.js';
import { sendJson, type Pacing, type SimulatorExchange } from './simulator-exchange.js';
import { VENDOR_SIMULATORS } from './vendor-registry.js';
import type { VendorSimulator } from './vendor-simulator.js';

export interface SimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to 127.0.0.1: the simulator is meant for loopback. */
  host?: string;
  /** Keys accepted by every vendor; when absent, any non-empty key is. */
  apiKeys?: string[];
  /** Default pacing; requests override it with `ttft=` / `chunk-delay=` directives. */
  pacing?: { firstTokenDelayMs?: number; chunkDelayMs?: number };
  /**
   * The vendors' prompt caches (docs/getting-started.md#the-simulators-prompt-cache): on by default; `false` reports every
   * prompt as uncached unless a `cache-read=` / `cache-write=` directive says otherwise.
   */
  promptCache?: boolean | PromptCacheStoreOptions;
}

export interface RunningSimulator {
  /** `http://host:port`, no trailing slash. */
  url: string;
  port: number;
  /** What to give each vendor's official SDK as its base URL. */
  baseUrls: Record<VendorName, string>;
  /** Stops listening, ends every open connection and pending timer. */
  close(): Promise<void>;
}

interface Route {
  vendor: VendorSimulator;
  path: string;
}

function route(pathname: string): Route | undefined {
  // OpenAI's own paths (/v1/chat/completions) are an alias of the /openai prefix.
  if (pathname.startsWith('/v1/')) return { vendor: VENDOR_SIMULATORS.openai, path: pathname };
  const slash = pathname.indexOf('/', 1);
  const prefix = slash === -1 ? pathname.slice(1) : pathname.slice(1, slash);
  if (!Object.hasOwn(VENDOR_SIMULATORS, prefix)) return undefined;
  return { vendor: VENDOR_SIMULATORS[prefix as VendorName], path: slash === -1 ? '/' : pathname.slice(slash) };
}

const BEARER = /^Bearer\s+(.+)$/i;

/** The key as any of the four vendors' clients send it. */
function requestApiKey(request: IncomingMessage, query: URLSearchParams): string | undefined {
  const { headers } = request;
  for (const header of [headers['x-api-key'], headers['x-goog-api-key']])
    if (typeof header === 'string' && header !== '') return header;
  const bearer = headers.authorization === undefined ? undefined : BEARER.exec(headers.authorization.trim())?.[1];
  return bearer ?? query.get('key') ?? undefined;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const host = options.host ?? '127.0.0.1';
  const pacing: Pacing = {
    firstTokenDelayMs: options.pacing?.firstTokenDelayMs ?? 0,
    chunkDelayMs: options.pacing?.chunkDelayMs ?? 0,
  };
  const acceptedKeys = options.apiKeys === undefined ? undefined : new Set(options.apiKeys);
  const isKeyAccepted = (key: string | undefined): boolean =>
    key !== undefined && key.length > 0 && (acceptedKeys === undefined || acceptedKeys.has(key));
  /** One controller per request in flight, so close() can end their waits. */
  const inFlight = new Set<AbortController>();
  let requestCounter = 0;
  const promptCache =
    options.promptCache === false
      ? undefined
      : new PromptCacheStore(options.promptCache === true ? {} : (options.promptCache ?? {}));
  const faultCounts = new Map<string, number>();
  const countFault = (key: string): number => {
    const before = faultCounts.get(key) ?? 0;
    // Bounded: a long-running simulator forgets old directives rather than grow without end.
    if (faultCounts.size >= 10_000 && before === 0) faultCounts.clear();
    faultCounts.set(key, before + 1);
    return before;
  };

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const controller = new AbortController();
    inFlight.add(controller);
    // 'close' fires when the response is done or the client went away: either way, stop waiting.
    response.once('close', () => {
      controller.abort();
      inFlight.delete(controller);
    });
    const rawUrl = request.url ?? '/';
    const queryAt = rawUrl.indexOf('?');
    const pathname = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
    const found = route(pathname);
    const query = new URLSearchParams(queryAt === -1 ? '' : rawUrl.slice(queryAt + 1));
    const exchange: SimulatorExchange = {
      request,
      response,
      path: found?.path ?? pathname,
      query,
      signal: controller.signal,
      pacing,
      requestId: `req_sim_${(++requestCounter).toString(36)}`,
      isKeyAccepted,
      apiKey: requestApiKey(request, query),
      countFault,
      promptCache,
    };
    try {
      if (found !== undefined) {
        await found.vendor.handle(exchange);
      } else if (pathname === '/health') {
        sendJson(exchange, 200, '{"status":"ok"}');
      } else {
        const error = {
          message: `Invalid URL (${request.method ?? 'GET'} ${pathname})`,
          type: 'invalid_request_error',
          param: null,
          code: null,
        };
        sendJson(exchange, 404, JSON.stringify({ error }));
      }
    } catch (error) {
      // Waits end with an AbortError when the client left or close() ran: nothing more to send then.
      if (controller.signal.aborted || response.headersSent) {
        response.destroy();
        return;
      }
      const message = `Simulator failure: ${error instanceof Error ? error.message : String(error)}`;
      sendJson(exchange, 500, JSON.stringify({ error: { message, type: 'server_error', param: null, code: null } }));
    }
  }

  const server = createServer((request, response) => void serve(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const baseUrls = Object.fromEntries(
    Object.values(VENDOR_SIMULATORS).map((vendor) => [vendor.vendor, url + vendor.basePath]),
  ) as Record<VendorName, string>;

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      for (const controller of inFlight) controller.abort();
      server.closeAllConnections();
    });
    return closing;
  }
  return { url, port, baseUrls, close };
}
