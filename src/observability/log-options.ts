import { stdSerializers, type LoggerOptions } from 'pino';
import { scrubSecrets } from './scrub-secrets.js';

/** Secrets never reach a log line, whatever logs the request. */
export const LOG_REDACTIONS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-goog-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  // Objects passed to a log call: credentials under their usual names, one or two levels down.
  '*.password',
  '*.apiKey',
  '*.api_key',
  '*.authorization',
  '*.*.password',
  '*.*.apiKey',
  '*.*.authorization',
];

/**
 * Every logged error goes through this serializer: pino's standard one, without the HTTP parser's `rawPacket`
 * (the request bytes it choked on, which may hold a `?key=` query string or an `Authorization` header) and with
 * key-like strings scrubbed from its message and stack. A guard on every line, whichever code logs the error.
 */
export function serializeLoggedError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const serialized = stdSerializers.err(error) as unknown as Record<string, unknown>;
  delete serialized['rawPacket'];
  for (const field of ['message', 'stack'] as const) {
    const text = serialized[field];
    if (typeof text === 'string') serialized[field] = scrubSecrets(text);
  }
  return serialized;
}

/** The options every Tollgate pino logger is made with. */
export const LOG_OPTIONS = {
  redact: LOG_REDACTIONS,
  serializers: { err: serializeLoggedError },
} satisfies LoggerOptions;
