/**
 * A webhook receiver on loopback for the outbound webhook and usage export tests: plain HTTP (what
 * WEBHOOK_ALLOW_HTTP_LOOPBACK allows) or HTTPS with a fresh self-signed certificate for chosen names. It answers each
 * request with the next status of a script and keeps every request it got.
 */
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ReceivedDelivery {
  body: string;
  headers: IncomingMessage['headers'];
  status: number;
}

export interface WebhookReceiver {
  port: number;
  /** `http(s)://127.0.0.1:port/hook`. */
  url: string;
  received: ReceivedDelivery[];
  /** The statuses to answer from now on, in order (the last one repeats). */
  script(statuses: number[]): void;
  close(): Promise<void>;
}

/** A self-signed certificate (and its key) for these DNS names and 127.0.0.1, made by openssl. */
export function selfSignedCertificate(names: string[]): { cert: string; key: string } {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-tls-'));
  try {
    const certFile = join(directory, 'cert.pem');
    const keyFile = join(directory, 'key.pem');
    const altNames = [...names.map((name) => `DNS:${name}`), 'IP:127.0.0.1'].join(',');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-subj',
        `/CN=${names[0] ?? 'localhost'}`,
        '-addext',
        `subjectAltName=${altNames}`,
        '-days',
        '1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

export async function startWebhookReceiver(
  options: { statuses?: number[]; tls?: { cert: string; key: string } } = {},
): Promise<WebhookReceiver> {
  let statuses = options.statuses ?? [200];
  let answered = 0;
  const received: ReceivedDelivery[] = [];
  const handler = (request: IncomingMessage, response: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = statuses[Math.min(answered, statuses.length - 1)] ?? 200;
      answered += 1;
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: request.headers, status });
      response.statusCode = status;
      response.end(status < 300 ? 'accepted' : 'failed');
    });
  };
  const server: Server =
    options.tls === undefined ? createHttpServer(handler) : createHttpsServer(options.tls, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}/hook`,
    received,
    script(next) {
      statuses = next;
      answered = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A receiver's check of a `tollgate-signature` header, written from docs/budget-alerts.md rather than taken from the
 * gateway's code: HMAC-SHA256 of `<t>.<raw body>` keyed by the secret, compared in constant time, `t` near the clock.
 */
export function verifyWebhookSignature(header: string, rawBody: string, secret: string, toleranceSeconds = 300) {
  const parts = header.split(',');
  const t = Number(parts.find((part) => part.startsWith('t='))?.slice(2));
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  return parts
    .filter((part) => part.startsWith('v1='))
    .some((part) => {
      const given = Buffer.from(part.slice(3), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
