/**
 * The floor: the least any Node.js gateway must do per request, measured beside the real gateway so its cost
 * can be read as a multiple of this one on the machine at hand (the floor for a Node gateway).
 *
 * A bare pass-through proxy: node:http in, undici `Pool.request` out to the mock upstream, keep-alive on both
 * sides. The request body is read whole (a gateway must have it before it can decide anything) and sent on as
 * the same bytes; the reply's status, content type and length are copied and its body is piped to the client
 * chunk by chunk as it arrives. No body parsing, no auth, no limits, no storage, no translation: everything the
 * gateway adds on top of this is the gateway's own cost, and nothing here can be taken away from a Node proxy.
 *
 * Run as its own process (`node dist/bench/floor-proxy.js --upstream http://127.0.0.1:PORT [--port N]`): it
 * prints one JSON line with its URL, as the mock does, and serves until SIGTERM.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { pathToFileURL } from 'node:url';
import { Pool, type Dispatcher } from 'undici';
import { commandLineOption, listenForBench, serveUntilSignalled, type BenchServer } from './bench-server.js';

/** Connection-level headers: each hop has its own (undici refuses some of them outright); content-length comes from the body. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'host',
  'content-length',
]);

/** The client's end-to-end headers (content type, credentials, API version) as they came. */
function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const forwarded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    forwarded[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return forwarded;
}

async function forward(pool: Pool, request: IncomingMessage, response: ServerResponse, body: Buffer): Promise<void> {
  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await pool.request({
      method: request.method ?? 'GET',
      path: request.url ?? '/',
      headers: forwardedHeaders(request.headers),
      body: body.length === 0 ? undefined : body,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`floor proxy: upstream request failed: ${message}\n`);
    response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`floor proxy: upstream request failed: ${message}`);
    return;
  }
  const headers: OutgoingHttpHeaders = {};
  const type = upstream.headers['content-type'];
  if (type !== undefined) headers['content-type'] = Array.isArray(type) ? type.join(', ') : type;
  // Copied so a JSON reply keeps its framing (no chunked encoding added); streams have none and stay chunked.
  const length = upstream.headers['content-length'];
  if (length !== undefined) headers['content-length'] = Array.isArray(length) ? length[0] : length;
  response.writeHead(upstream.statusCode, headers);
  // Each chunk is written as it arrives (every SSE event the mock writes is its own chunk), with backpressure.
  // Classic pipe() rather than stream.pipeline(): the same flow control with fewer listeners per request, 0.07
  // against 0.11 ms of CPU per request at concurrency 16 in alternating runs here, and the floor should be the
  // least a proxy needs. The two error paths pipeline() would cover are handled by hand.
  const reply = upstream.body;
  reply.pipe(response);
  // The upstream broke off mid-reply: the client must see a cut reply, not a complete-looking one.
  reply.once('error', (error: Error) => response.destroy(error));
  // The client left mid-reply: stop reading the upstream (undici then drops that connection).
  response.once('close', () => {
    if (!reply.readableEnded) reply.destroy();
  });
}

/** Starts the floor proxy in front of `upstreamOrigin` on `port` (0: any free port) and resolves with its origin. */
export async function startFloorProxy(
  upstreamOrigin: string,
  port: number,
  host = '127.0.0.1',
  connections = 256,
): Promise<BenchServer> {
  // The same pool settings as the gateway's upstream client (src/providers/upstream-http.ts); the c10k mode gives
  // both as many connections as it holds streams (the gateway through deployments of a few hundred each).
  const pool = new Pool(upstreamOrigin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const server = createServer({ keepAliveTimeout: 120_000 }, (request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      void forward(pool, request, response, parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
    });
  });
  return listenForBench(server, port, host, 'floor proxy', () => pool.destroy());
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const upstream = commandLineOption('--upstream');
  if (upstream === undefined) {
    process.stderr.write(
      'usage: node dist/bench/floor-proxy.js --upstream http://HOST:PORT [--port N] [--connections N]\n',
    );
    process.exit(2);
  }
  const proxy = await startFloorProxy(
    upstream,
    Number(commandLineOption('--port') ?? 0),
    '127.0.0.1',
    Number(commandLineOption('--connections') ?? 256),
  );
  serveUntilSignalled(proxy);
}
