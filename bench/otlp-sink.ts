/**
 * `--otel`: a stand-in OpenTelemetry collector for the bench. It accepts OTLP/HTTP exports (`POST /v1/traces`,
 * `POST /v1/metrics`) on loopback and answers 200 at once without decoding them, so the measured cost is the
 * gateway's own (spans made, batched, encoded and sent), not a collector's. Runs in the bench process, on the
 * load core.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  /** The value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  origin: string;
  /** Exports and bytes received so far, per signal path. */
  received(): Record<string, { exports: number; bytes: number }>;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const received: Record<string, { exports: number; bytes: number }> = {};
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    const counts = received[path] ?? { exports: 0, bytes: 0 };
    received[path] = counts;
    request.on('data', (chunk: Buffer) => {
      counts.bytes += chunk.length;
    });
    request.on('end', () => {
      counts.exports += 1;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    received: () => structuredClone(received),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
