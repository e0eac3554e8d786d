/**
 * A pass-through proxy in front of the simulator that keeps every request body it forwards, so a test can read
 * exactly what the gateway sent upstream. Hand-written on node:http: the test needs nothing more.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  body: Record<string, unknown>;
}

export interface RecordingProxy {
  /** `http://127.0.0.1:port`: give `${url}/anthropic` (etc.) to the gateway as a vendor's base URL. */
  url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const origin = new URL(target);
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (raw.length > 0) requests.push({ path: incoming.url ?? '', body: JSON.parse(raw.toString('utf8')) });
      const forwarded = httpRequest(
        {
          host: origin.hostname,
          port: origin.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: origin.host, connection: 'close' },
        },
        (reply) => {
          outgoing.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
