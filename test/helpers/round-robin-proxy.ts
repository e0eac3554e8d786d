/**
 * A minimal load balancer for tests: forwards each incoming HTTP request to the next target in turn,
 * streaming both bodies, like nginx's default round-robin (deploy/nginx.conf). Hand-written on node:http
 * because it is a few lines and a proxy library would add nothing a test needs. A target that refuses the
 * connection answers 502 (no retry: a retried POST could run twice); `remove` takes a dead target out.
 */
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Hop-by-hop headers describe one connection, not the message (RFC 9110 §7.6.1): forwarding the gateway's
 * `keep-alive: timeout=72` would make the client reuse a connection this proxy has already closed.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

export interface RoundRobinProxy {
  url: string;
  /** Which target each forwarded request went to, in order (origins). */
  readonly routed: string[];
  remove(target: string): void;
  close(): Promise<void>;
}

export async function startRoundRobinProxy(targets: string[]): Promise<RoundRobinProxy> {
  const live = targets.map((target) => new URL(target).origin);
  const routed: string[] = [];
  let next = 0;
  // Idle upstream connections are dropped after 4 s, before any server's keep-alive timeout (Node's default 5 s)
  // could close one just as it is reused.
  const agent = new Agent({ keepAlive: true, timeout: 4_000 });
  const server: Server = createServer((incoming, outgoing) => {
    if (live.length === 0) {
      outgoing.writeHead(502).end('no live targets');
      return;
    }
    const target = new URL(live[next++ % live.length]!);
    routed.push(target.origin);
    const upstream = httpRequest(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: endToEnd(incoming.headers),
      },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, endToEnd(response.headers));
        response.pipe(outgoing);
        // An upstream killed mid-stream: end the client's response abruptly too, as a real proxy would.
        response.on('error', () => outgoing.destroy());
        response.on('aborted', () => outgoing.destroy());
      },
    );
    upstream.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502).end('bad gateway');
      else outgoing.destroy();
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routed,
    remove(target) {
      const index = live.indexOf(new URL(target).origin);
      if (index >= 0) live.splice(index, 1);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
