import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd } from '../../src/billing/money.js';
import type { VendorName } from '../../src/canonical/request.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { freePort } from '../helpers/free-port.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * OpenTelemetry as an operator turns it on: the built gateway with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real
 * OTLP/HTTP receiver on loopback, the simulator behind a recording proxy (to see the trace context the vendor gets),
 * and a client that sends its own `traceparent` on each client protocol.
 */

const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;
const UPSTREAM_SECRET = 'sk-upstream-secret-never-exported-0123456789';

interface ProtocolCase {
  name: string;
  model: string;
  vendor: VendorName;
  provider: string;
  operation: string;
  path: string;
  body: (prompt: string) => Record<string, unknown>;
  headers: (key: string) => Record<string, string>;
}

const CASES: ProtocolCase[] = [
  {
    name: 'OpenAI chat',
    model: 'beta-5.4',
    vendor: 'openai',
    provider: 'openai',
    operation: 'chat',
    path: '/v1/chat/completions',
    body: (prompt) => ({
      model: 'beta-5.4',
      stream: true,
      max_tokens: 1024,
      temperature: 0.5,
      messages: [{ role: 'user', content: prompt }],
    }),
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: 'Anthropic messages',
    model: 'alpha-sonnet-5',
    vendor: 'anthropic',
    provider: 'anthropic',
    operation: 'chat',
    path: '/v1/messages',
    body: (prompt) => ({
      model: 'alpha-sonnet-5',
      stream: true,
      max_tokens: 1024,
      temperature: 0.5,
      messages: [{ role: 'user', content: prompt }],
    }),
    headers: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
  },
  {
    name: 'Responses',
    model: 'delta-v4-flash',
    vendor: 'deepseek',
    provider: 'deepseek',
    operation: 'chat',
    path: '/v1/responses',
    body: (prompt) => ({
      model: 'delta-v4-flash',
      stream: true,
      max_output_tokens: 1024,
      temperature: 0.5,
      input: prompt,
    }),
    headers: (key) => ({ authorization: `Bearer ${key}` }),
  },
  {
    name: 'Gemini',
    model: 'gamma-2.5-pro',
    vendor: 'gemini',
    provider: 'gcp.gemini',
    operation: 'generate_content',
    path: '/v1beta/models/gamma-2.5-pro:streamGenerateContent?alt=sse',
    body: (prompt) => ({
      contents: [{ role: 'user', parts: [{ text: prompt }] }],
      generationConfig: { maxOutputTokens: 1024, temperature: 0.5 },
    }),
    headers: (key) => ({ 'x-goog-api-key': key }),
  },
];

function hexId(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

describe('OpenTelemetry traces and metrics to an OTLP collector', () => {
  let receiver: OtlpReceiver;
  let simulator: RunningSimulator;
  let proxy: RecordingProxy;
  let harness: TestGateway;
  let account: { accountId: string; key: string; keyId: string };
  const prompts: string[] = [];
  const replies: string[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    proxy = await startRecordingProxy(simulator.url);
    const throughProxy = (vendor: VendorName) => simulator.baseUrls[vendor].replace(simulator.url, proxy.url);
    harness = await startTestGateway({
      vendors: [],
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'tollgate-under-test',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_METRIC_EXPORT_INTERVAL: '300',
        FREE_TOKENS_PER_DAY: '0',
        ANTHROPIC_API_KEY: UPSTREAM_SECRET,
        OPENAI_API_KEY: UPSTREAM_SECRET,
        GEMINI_API_KEY: UPSTREAM_SECRET,
        DEEPSEEK_API_KEY: UPSTREAM_SECRET,
        ANTHROPIC_BASE_URL: throughProxy('anthropic'),
        OPENAI_BASE_URL: throughProxy('openai'),
        GEMINI_BASE_URL: throughProxy('gemini'),
        DEEPSEEK_BASE_URL: throughProxy('deepseek'),
      },
    });
    account = await harness.createAccountWithKey();
    await harness.gateway.storage.billing.credit({
      accountId: account.accountId,
      kind: 'topup',
      amountNano: parseUsd('10'),
      idempotencyKey: `otel-${account.accountId}`,
      note: null,
      at: Date.now(),
    });
  });

  afterAll(async () => {
    await harness?.close();
    await proxy?.close();
    await simulator?.close();
    await receiver?.close();
  });

  describe.each(CASES)('a streamed request on $name', (protocol) => {
    it('is one server span in the client trace with admission, upstream attempt and settlement children', async () => {
      const traceId = hexId(16);
      const clientSpanId = hexId(8);
      const prompt = `otel-prompt-marker-${hexId(6)} Say something short.`;
      prompts.push(prompt);
      const proxied = proxy.recorded.length;
      const response = await fetch(`${harness.gateway.url}${protocol.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          traceparent: `00-${traceId}-${clientSpanId}-01`,
          tracestate: 'client=t61rcWkgMzE',
          ...protocol.headers(account.key),
        },
        body: JSON.stringify(protocol.body(prompt)),
      });
      expect(response.status).toBe(200);
      const streamed = await response.text();
      replies.push(streamed);
      const requestId = response.headers.get('x-request-id')!;

      await receiver.waitForSpans((spans) => {
        const own = spans.filter((span) => span.traceId === traceId);
        return own.length >= 4 && own.some((span) => span.kind === SERVER);
      });
      const spans = receiver.spans.filter((span) => span.traceId === traceId);
      const root = spans.find((span) => span.kind === SERVER)!;
      // A child of the client's span, in the client's trace.
      expect(root.parentSpanId).toBe(clientSpanId);
      expect(root.traceState).toBe('client=t61rcWkgMzE');
      expect(root.name).toBe(`${protocol.operation} ${protocol.model}`);
      expect(root.statusCode).not.toBe(STATUS_ERROR);
      const attributes = root.attributes;
      expect(attributes).toMatchObject({
        'gen_ai.operation.name': protocol.operation,
        'gen_ai.provider.name': protocol.provider,
        'gen_ai.system': protocol.provider,
        'gen_ai.request.model': protocol.model,
        'gen_ai.request.max_tokens': 1024,
        'gen_ai.request.temperature': 0.5,
        'gen_ai.request.stream': true,
        'gen_ai.response.finish_reasons': ['stop'],
        'tollgate.request_id': requestId,
        'tollgate.organisation.id': account.accountId,
        'tollgate.key.id': account.keyId,
        'tollgate.model': protocol.model,
        'tollgate.outcome': 'ok',
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'url.path': protocol.path.split('?')[0],
      });
      expect(typeof attributes['gen_ai.response.model']).toBe('string');
      expect(typeof attributes['gen_ai.response.id']).toBe('string');
      expect(attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(attributes['gen_ai.usage.cache_read.input_tokens']).toBe(0);
      expect(attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThan(0);

      // The cost on the span is the one the usage record holds, exactly.
      const [record] = (await harness.gateway.storage.usage.listByAccount(account.accountId, 20)).filter(
        (row) => row.requestId === requestId,
      );
      expect(record).toBeDefined();
      expect(record!.costNano).toBeGreaterThan(0n);
      expect(attributes['tollgate.cost.nano_usd']).toBe(Number(record!.costNano));
      expect(attributes['tollgate.cost.usd']).toBe(formatUsd(record!.costNano));
      expect(attributes['gen_ai.usage.output_tokens']).toBe(record!.outputTokens);

      const children = spans.filter((span) => span.parentSpanId === root.spanId);
      const byName = (name: string) => children.filter((span) => span.name === name);
      expect(byName('tollgate.admission')).toHaveLength(1);
      const [settlement] = byName('tollgate.settlement');
      expect(settlement?.attributes).toMatchObject({
        'tollgate.outcome': 'ok',
        'tollgate.settlement.state': 'settled',
        'tollgate.cost.nano_usd': Number(record!.costNano),
      });
      const attempts = byName(`upstream ${protocol.vendor}`);
      expect(attempts).toHaveLength(1);
      const attempt = attempts[0]!;
      expect(attempt.kind).toBe(CLIENT);
      expect(attempt.attributes).toMatchObject({
        'gen_ai.provider.name': protocol.provider,
        'http.response.status_code': 200,
        'tollgate.upstream.attempt': 1,
        'tollgate.upstream.credential': expect.any(String),
      });
      // The upstream attempt spans the reply: it ends after the first output arrived.
      expect(attempt.endNs).toBeGreaterThan(attempt.startNs);

      // The vendor got the attempt's trace context: the same trace, the attempt span as its parent.
      const upstream = proxy.recorded.slice(proxied);
      expect(upstream).toHaveLength(1);
      expect(upstream[0]!.headers.traceparent).toBe(`00-${traceId}-${attempt.spanId}-01`);
      expect(upstream[0]!.headers.tracestate).toBe('client=t61rcWkgMzE');
      if (protocol.vendor !== 'gemini') expect(attempt.attributes['tollgate.upstream.request_id']).toMatch(/^req_sim_/);
    });
  });

  it('never exports a key, a credential or message content', async () => {
    await receiver.waitForSpans((spans) => spans.length >= CASES.length * 4);
    const exported = Buffer.concat(receiver.rawBodies).toString('latin1');
    expect(exported).not.toContain(account.key);
    expect(exported).not.toContain(account.key.slice(-16));
    expect(exported).not.toContain(UPSTREAM_SECRET);
    for (const prompt of prompts) expect(exported).not.toContain(prompt.slice(0, 30));
    expect(exported).not.toContain('gen_ai.input.messages');
    expect(exported).not.toContain('gen_ai.output.messages');
    expect(prompts).toHaveLength(CASES.length);
  });

  it('exports the GenAI client metrics by token type, with the resource the variables name', async () => {
    await receiver.waitForHistogramPoints((points) =>
      CASES.every((protocol) =>
        ['input', 'output'].every((type) =>
          points.some(
            (point) =>
              point.metric === 'gen_ai.client.token.usage' &&
              point.attributes['gen_ai.request.model'] === protocol.model &&
              point.attributes['gen_ai.token.type'] === type,
          ),
        ),
      ),
    );
    const usage = receiver.histogramPoints.find(
      (point) =>
        point.metric === 'gen_ai.client.token.usage' &&
        point.attributes['gen_ai.request.model'] === 'alpha-sonnet-5' &&
        point.attributes['gen_ai.token.type'] === 'output',
    )!;
    expect(usage.unit).toBe('{token}');
    expect(usage.count).toBeGreaterThanOrEqual(1);
    expect(usage.sum).toBeGreaterThan(0);
    expect(usage.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.response.model': expect.any(String),
    });
    const duration = receiver.histogramPoints.find(
      (point) =>
        point.metric === 'gen_ai.client.operation.duration' &&
        point.attributes['gen_ai.request.model'] === 'gamma-2.5-pro',
    )!;
    expect(duration.unit).toBe('s');
    expect(duration.attributes['gen_ai.operation.name']).toBe('generate_content');
    expect(duration.sum).toBeGreaterThan(0);
    expect(duration.sum).toBeLessThan(30);

    const resource = receiver.spans[0]!.resource;
    expect(resource['service.name']).toBe('tollgate-under-test');
    expect(resource['deployment.environment.name']).toBe('test');
  });

  it('records a refused request with its error type and no upstream attempt', async () => {
    const traceId = hexId(16);
    const response = await fetch(`${harness.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${account.key}`,
        traceparent: `00-${traceId}-${hexId(8)}-01`,
      },
      body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(400);
    await receiver.waitForSpans((spans) => spans.some((span) => span.traceId === traceId));
    const spans: ReceivedSpan[] = receiver.spans.filter((span) => span.traceId === traceId);
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes).toMatchObject({
      'http.response.status_code': 400,
      'tollgate.outcome': 'refused',
      'error.type': 'unknown_model',
    });
  });
});

describe('OpenTelemetry with a collector that never answers', () => {
  let blackHole: Server;
  const sockets = new Set<Socket>();
  let harness: TestGateway;
  let key: string;

  beforeAll(async () => {
    // Accepts connections and never answers: the exporter waits out its timeout on every batch.
    blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    const port = await freePort();
    await new Promise<void>((resolve) => blackHole.listen(port, '127.0.0.1', resolve));
    harness = await startTestGateway({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
        OTEL_BSP_MAX_QUEUE_SIZE: '8',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_METRICS_EXPORTER: 'none',
        METRICS_TOKEN: 'otel-metrics-token-0123456789',
      },
    });
    const created = await harness.createAccountWithKey();
    key = created.key;
  });

  afterAll(async () => {
    await harness?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => blackHole?.close(() => resolve()));
  });

  async function droppedSpans(): Promise<Record<string, number>> {
    const response = await fetch(`${harness.gateway.url}/metrics`, {
      headers: { authorization: 'Bearer otel-metrics-token-0123456789' },
    });
    const text = await response.text();
    const counts: Record<string, number> = {};
    for (const match of text.matchAll(/^tollgate_telemetry_dropped_spans_total\{reason="(\w+)"\} (\d+)/gm))
      counts[match[1]!] = Number(match[2]);
    return counts;
  }

  it('serves every request at once, and counts the spans it had to drop', async () => {
    const send = async () => {
      const started = performance.now();
      const response = await fetch(`${harness.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'Say hi.' }] }),
      });
      expect(response.status).toBe(200);
      await response.json();
      return performance.now() - started;
    };
    await send();
    const latencies: number[] = [];
    for (let round = 0; round < 5; round++) latencies.push(...(await Promise.all(Array.from({ length: 8 }, send))));
    latencies.sort((a, b) => a - b);
    // Every request ends well inside the exporter's 5 s timeout, and the typical one at the simulator's pace:
    // nothing waits on the collector.
    expect(latencies.at(-1)).toBeLessThan(2_500);
    expect(latencies[latencies.length >> 1]).toBeLessThan(750);
    // 41 requests make 164 spans for a queue of 8: most are dropped at once, the batches sent time out.
    expect((await droppedSpans()).queue_full).toBeGreaterThan(50);
    await expect
      .poll(async () => (await droppedSpans()).export_failed ?? 0, { timeout: 25_000, interval: 250 })
      .toBeGreaterThan(0);
  }, 60_000);

  it('still stops promptly: the last flush is bounded', async () => {
    const started = performance.now();
    const exitCode = await harness.gateway.close();
    expect(exitCode).toBe(0);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe('OpenTelemetry at shutdown, with message content capture on', () => {
  let receiver: OtlpReceiver;
  let harness: TestGateway;
  let key: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    harness = await startTestGateway({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        // Nothing leaves on a timer during the test: what arrives was sent by the shutdown's flush.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
    });
    key = (await harness.createAccountWithKey()).key;
  });

  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  it('flushes the last spans and metrics as the gateway stops, content included when asked for', async () => {
    const prompt = `capture-marker-${hexId(6)} Reply briefly.`;
    const response = await fetch(`${harness.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'alpha-sonnet-5', max_tokens: 256, messages: [{ role: 'user', content: prompt }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { content: Array<{ text?: string }> };
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.spans).toHaveLength(0);

    expect(await harness.gateway.close()).toBe(0);
    expect(receiver.spans.map((span) => span.name).sort()).toEqual([
      'chat alpha-sonnet-5',
      'tollgate.admission',
      'tollgate.settlement',
      'upstream anthropic',
    ]);
    expect(receiver.histogramPoints.map((point) => point.metric)).toContain('gen_ai.client.token.usage');
    const root = receiver.spans.find((span) => span.kind === SERVER)!;
    const input = JSON.parse(root.attributes['gen_ai.input.messages'] as string) as unknown;
    expect(input).toEqual([{ role: 'user', parts: [{ type: 'text', content: prompt }] }]);
    const output = JSON.parse(root.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ content?: string }>;
    }>;
    expect(output[0]!.parts[0]!.content).toBe(body.content[0]!.text);
    // Content, when asked for, is the conversation only: never the key.
    expect(Buffer.concat(receiver.rawBodies).toString('latin1')).not.toContain(key);
  });
});
