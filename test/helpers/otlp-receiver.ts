/**
 * An OTLP/HTTP collector for tests: a node:http server on loopback that takes `POST /v1/traces` and
 * `POST /v1/metrics` in protobuf (gzip or not), answers 200 with an empty export response as a collector does,
 * and keeps both the raw bodies (to search them for what must never be exported) and their decoded spans and
 * metric points.
 *
 * The decoder is hand-written over the OTLP protobuf field numbers (opentelemetry-proto's trace.proto,
 * metrics.proto and common.proto): @opentelemetry/otlp-transformer 0.301 ships only a protobuf writer and the
 * export-response reader, no request decoder, and no protobuf runtime is installed. It reads just the fields the
 * tests look at and skips the rest by wire type.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

export interface ReceivedHistogramPoint {
  metric: string;
  unit: string;
  attributes: Record<string, AttributeValue>;
  count: number;
  sum: number | undefined;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:port`: the value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  readonly spans: ReceivedSpan[];
  readonly histogramPoints: ReceivedHistogramPoint[];
  /** Every export body as received (decompressed), traces and metrics. */
  readonly rawBodies: Buffer[];
  /** Resolves once `predicate` holds over the spans received so far (checked as exports arrive). */
  waitForSpans(predicate: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  waitForHistogramPoints(
    predicate: (points: readonly ReceivedHistogramPoint[]) => boolean,
    timeoutMs?: number,
  ): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const histogramPoints: ReceivedHistogramPoint[] = [];
  const rawBodies: Buffer[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let body = Buffer.concat(chunks);
      if (request.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      rawBodies.push(body);
      try {
        if (request.url === '/v1/traces') spans.push(...decodeTraces(body));
        else if (request.url === '/v1/metrics') histogramPoints.push(...decodeHistograms(body));
        else {
          response.writeHead(404).end();
          return;
        }
      } catch (error) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        return;
      }
      // An empty ExportTraceServiceResponse / ExportMetricsServiceResponse: everything accepted.
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      for (const wake of [...waiters]) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(wake);
        reject(new Error(`OTLP receiver: ${what} did not arrive within ${timeoutMs} ms`));
      }, timeoutMs);
      const wake = () => {
        if (!check()) return;
        clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      waiters.add(wake);
    });
  }

  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    histogramPoints,
    rawBodies,
    waitForSpans: (predicate, timeoutMs = 15_000) => waitFor(() => predicate(spans), timeoutMs, 'the spans'),
    waitForHistogramPoints: (predicate, timeoutMs = 15_000) =>
      waitFor(() => predicate(histogramPoints), timeoutMs, 'the metric points'),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** A protobuf message as its fields: number → the values it had, in order (varint, fixed or length-delimited). */
type Fields = Map<number, Array<bigint | Buffer>>;

/** Splits one message into its fields by wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. */
function fieldsOf(buffer: Buffer): Fields {
  const fields: Fields = new Map();
  let position = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (position >= buffer.length) throw new Error('truncated varint');
      const byte = buffer[position++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (position < buffer.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wireType = tag & 7;
    let value: bigint | Buffer;
    if (wireType === 0) value = varint();
    else if (wireType === 1) {
      value = buffer.subarray(position, position + 8);
      position += 8;
    } else if (wireType === 2) {
      const length = Number(varint());
      value = buffer.subarray(position, position + length);
      position += length;
    } else if (wireType === 5) {
      value = buffer.subarray(position, position + 4);
      position += 4;
    } else throw new Error(`unsupported wire type ${wireType}`);
    if (position > buffer.length) throw new Error('truncated field');
    const list = fields.get(field);
    if (list === undefined) fields.set(field, [value]);
    else list.push(value);
  }
  return fields;
}

function messages(fields: Fields, field: number): Fields[] {
  return (fields.get(field) ?? []).map((value) => fieldsOf(value as Buffer));
}

function bytes(fields: Fields, field: number): Buffer | undefined {
  return fields.get(field)?.[0] as Buffer | undefined;
}

function text(fields: Fields, field: number): string {
  return bytes(fields, field)?.toString('utf8') ?? '';
}

function hex(fields: Fields, field: number): string {
  return bytes(fields, field)?.toString('hex') ?? '';
}

function varintOf(fields: Fields, field: number): bigint {
  return (fields.get(field)?.[0] as bigint | undefined) ?? 0n;
}

function fixed64(fields: Fields, field: number): bigint {
  return bytes(fields, field)?.readBigUInt64LE(0) ?? 0n;
}

/** AnyValue: 1 string, 2 bool, 3 int64, 4 double, 5 array (ArrayValue.values = 1). */
function anyValue(value: Fields): AttributeValue {
  if (value.has(1)) return text(value, 1);
  if (value.has(2)) return varintOf(value, 2) !== 0n;
  if (value.has(3)) return Number(BigInt.asIntN(64, varintOf(value, 3)));
  if (value.has(4)) return bytes(value, 4)!.readDoubleLE(0);
  if (value.has(5)) return messages(fieldsOf(bytes(value, 5)!), 1).map(anyValue);
  return undefined;
}

/** repeated KeyValue (key = 1, value = 2). */
function attributesOf(fields: Fields, field: number): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const pair of messages(fields, field)) {
    const value = bytes(pair, 2);
    attributes[text(pair, 1)] = value === undefined ? undefined : anyValue(fieldsOf(value));
  }
  return attributes;
}

/** ExportTraceServiceRequest → ResourceSpans (1) → resource (1), ScopeSpans (2) → Span (2). */
function decodeTraces(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of messages(fieldsOf(body), 1)) {
    const resourceFields = bytes(resourceSpans, 1);
    const resource = resourceFields === undefined ? {} : attributesOf(fieldsOf(resourceFields), 1);
    for (const scopeSpans of messages(resourceSpans, 2)) {
      for (const span of messages(scopeSpans, 2)) {
        const status = bytes(span, 15);
        spans.push({
          traceId: hex(span, 1),
          spanId: hex(span, 2),
          traceState: text(span, 3),
          parentSpanId: hex(span, 4),
          name: text(span, 5),
          kind: Number(varintOf(span, 6)),
          startNs: fixed64(span, 7),
          endNs: fixed64(span, 8),
          attributes: attributesOf(span, 9),
          statusCode: status === undefined ? 0 : Number(varintOf(fieldsOf(status), 3)),
          resource,
        });
      }
    }
  }
  return spans;
}

/**
 * ExportMetricsServiceRequest → ResourceMetrics (1) → ScopeMetrics (2) → Metric (2: name 1, unit 3, histogram 9)
 * → HistogramDataPoint (1: count 4 fixed64, sum 5 double, attributes 9).
 */
function decodeHistograms(body: Buffer): ReceivedHistogramPoint[] {
  const points: ReceivedHistogramPoint[] = [];
  for (const resourceMetrics of messages(fieldsOf(body), 1)) {
    for (const scopeMetrics of messages(resourceMetrics, 2)) {
      for (const metric of messages(scopeMetrics, 2)) {
        const histogram = bytes(metric, 9);
        if (histogram === undefined) continue;
        for (const point of messages(fieldsOf(histogram), 1)) {
          const sum = bytes(point, 5);
          points.push({
            metric: text(metric, 1),
            unit: text(metric, 3),
            attributes: attributesOf(point, 9),
            count: Number(fixed64(point, 4)),
            sum: sum === undefined ? undefined : sum.readDoubleLE(0),
          });
        }
      }
    }
  }
  return points;
}
