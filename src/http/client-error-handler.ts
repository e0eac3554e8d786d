import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../canonical/errors.js';
import { nextRequestId } from '../ids/request-id.js';
import { renderPathError } from './unmatched-requests.js';

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before any route runs (a head over
 * MAX_HEADER_BYTES, a slow client past HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS, malformed HTTP), answered in the
 * error shape of the endpoint the request line names when it can be read, then the connection is closed.
 * Hand-written because fastify's default answers in its own shape.
 */
export function handleClientError(
  this: FastifyInstance,
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const gatewayError = classify(error.code);
  // The logger's error serializer drops the rawPacket (the request line may carry ?key=) and scrubs the message.
  this.log.debug({ err: error }, 'client error');
  if (socket.writable) {
    const path = requestPath(error.rawPacket);
    // No fastify request exists yet: the answer gets its own id, as every other reply has one.
    const requestId = nextRequestId();
    const rendered = renderPathError(gatewayError, path ?? '/', false, requestId);
    const body = JSON.stringify(rendered.body);
    const headers = Object.entries({ ...rendered.headers, 'x-request-id': requestId })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Error'}\r\n${headers}` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

function classify(code: string | undefined): GatewayError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError('request_timeout', 'The request did not arrive in time.');
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError('headers_too_large', 'The request headers are larger than this gateway accepts.');
    default:
      return new GatewayError('invalid_request', 'The request is not valid HTTP.');
  }
}

/** The path of the request line, when the parser kept the bytes it choked on. */
function requestPath(raw: unknown): string | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const line = raw.subarray(0, 2_048).toString('latin1').split('\r\n', 1)[0] ?? '';
  return /^[A-Z]+ (\/\S*) HTTP\/1\.[01]$/.exec(line)?.[1];
}
