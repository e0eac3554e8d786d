/**
 * A proxy for tests that need to see what the gateway sent upstream: it forwards every request to one target (the
 * simulator), streaming the reply back, and records each request's path, credential and JSON body. A credential
 * put in `failing` is answered with a 500 in OpenAI's error shape instead of being forwarded, as a vendor account
 * in trouble would be. Hand-written on node:http, like round-robin-proxy.ts.
 */
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  /** The bearer token or `x-api-key`: which credential the gateway used. */
  credential: string | undefined;
  body: Record<string, unknown>;
  /** The body as the gateway wrote it. */
  text: string;
  /** The request's headers as the gateway sent them (trace context included). */
  headers: IncomingHttpHeaders;
  /** The status this proxy answered with (the target's, or 500 for a failing credential). */
  status: number;
}

export interface RecordingProxy {
  url: string;
  readonly recorded: RecordedRequest[];
  /** Credentials answered with a 500 rather than forwarded. */
  readonly failing: Set<string>;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'upgrade']);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

function credentialOf(headers: IncomingHttpHeaders): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
  const apiKey = headers['x-api-key'];
  return bearer ?? (typeof apiKey === 'string' ? apiKey : undefined);
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const origin = new URL(target);
  const recorded: RecordedRequest[] = [];
  const failing = new Set<string>();
  const agent = new Agent({ keepAlive: true, timeout: 4_000 });
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const raw = Buffer.concat(chunks);
      const credential = credentialOf(incoming.headers);
      const entry: RecordedRequest = {
        path: incoming.url ?? '/',
        credential,
        headers: incoming.headers,
        body: raw.length === 0 ? {} : (JSON.parse(raw.toString('utf8')) as Record<string, unknown>),
        text: raw.toString('utf8'),
        status: 0,
      };
      recorded.push(entry);
      if (credential !== undefined && failing.has(credential)) {
        entry.status = 500;
        const error = { message: 'The server had an error.', type: 'server_error', param: null, code: null };
        outgoing.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
        return;
      }
      const upstream = httpRequest(
        {
          agent,
          host: origin.hostname,
          port: origin.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...forwardable(incoming.headers), 'content-length': String(raw.length) },
        },
        (response) => {
          entry.status = response.statusCode ?? 502;
          outgoing.writeHead(entry.status, forwardable(response.headers));
          response.pipe(outgoing);
          response.on('error', () => outgoing.destroy());
        },
      );
      upstream.on('error', () => {
        if (!outgoing.headersSent) outgoing.writeHead(502).end('bad gateway');
        else outgoing.destroy();
      });
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    recorded,
    failing,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
