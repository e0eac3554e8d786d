import { ProxyTracerProvider } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseAccumulator } from '../canonical/accumulate.js';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage } from '../canonical/usage.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { ExchangeTelemetry, type TelemetryRuntime } from './exchange-telemetry.js';

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const model = new ModelCatalog().resolve('alpha-sonnet-5');
const auth = { key: { id: 'key_1', accountId: 'acct_1' }, organisation: { id: 'acct_1' } } as AuthenticatedKey;
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

function runtime(captureMessageContent = false): TelemetryRuntime {
  return { tracer: provider.getTracer('test'), tracing: true, metrics: undefined, captureMessageContent };
}

function exchange(telemetry: TelemetryRuntime): ExchangeTelemetry {
  return new ExchangeTelemetry(
    telemetry,
    {
      headers: { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` },
      method: 'POST',
      route: '/v1/messages',
      path: '/v1/messages',
      requestId: 'req_1',
    },
    { protocol: 'anthropic-messages', operation: 'chat' },
  );
}

const request: CanonicalRequest = {
  model: 'alpha-sonnet-5',
  system: [{ type: 'text', text: 'Be brief.' }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in the picture?' },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'QUJD'.repeat(1000) } },
      ],
    },
  ],
  sampling: {},
  stream: true,
  extensions: {},
  extensionsProtocol: 'anthropic-messages',
};

function reply(): ResponseAccumulator {
  const accumulator = new ResponseAccumulator();
  accumulator.apply({ type: 'response-start', id: 'msg_1', model: 'claude-x', created: 1 });
  accumulator.apply({ type: 'text-start', blockId: 't' });
  accumulator.apply({ type: 'text-delta', blockId: 't', text: 'A cat.' });
  accumulator.apply({ type: 'finish', reason: 'stop', rawReason: 'end_turn' });
  return accumulator;
}

afterEach(() => exporter.reset());

/** The finished spans, once the processor has handed them over (it exports off the call that ends a span). */
async function finished() {
  await provider.forceFlush();
  return exporter.getFinishedSpans();
}

describe('one request as spans', () => {
  it('ends the request span only once the response closed and the reply settled, whichever comes last', async () => {
    const trace = exchange(runtime());
    trace.exchangeStarted(request, model, auth);
    await trace.admission(async () => 'held');
    trace.attemptStarted({ vendor: 'anthropic', credential: 'main', number: 1, upstreamModel: 'claude-x' });
    trace.attemptAnswered(200, 'req_vendor');
    expect(trace.propagationHeaders?.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    // The client hangs up mid-stream: its socket closes before the reply is settled.
    trace.responseEnded(200);
    expect((await finished()).map((span) => span.name)).toEqual(['tollgate.admission']);
    await trace.settlement('client_disconnected', async () => ({
      settled: true,
      chargedNano: 1_234_500n,
      unbilledNano: 0n,
      unbilledTokens: 0,
      freeTokensUsed: 0,
    }));
    trace.replyFinished(reply().response, { ...emptyUsage(), inputTokens: 12, outputTokens: 3 }, 'client_disconnected');
    const spans = await finished();
    const root = spans.find((span) => span.name === 'chat alpha-sonnet-5')!;
    expect(root.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(root.attributes).toMatchObject({
      'tollgate.cost.nano_usd': 1_234_500,
      'tollgate.cost.usd': '0.0012345',
      'tollgate.outcome': 'client_disconnected',
      'gen_ai.usage.input_tokens': 12,
      'http.response.status_code': 200,
    });
    const attempt = spans.find((span) => span.name === 'upstream anthropic')!;
    expect(attempt.attributes['tollgate.upstream.request_id']).toBe('req_vendor');
    expect(trace.propagationHeaders?.traceparent).toContain(attempt.spanContext().spanId);
    // Nothing of the conversation without the switch.
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('cat');
  });

  it("records the conversation in the conventions' message shape when the switch is on, media by size only", async () => {
    const trace = exchange(runtime(true));
    trace.exchangeStarted(request, model, auth);
    trace.replyFinished(reply().response, emptyUsage(), 'ok');
    trace.responseEnded(200);
    const root = (await finished())[0]!;
    expect(JSON.parse(root.attributes['gen_ai.system_instructions'] as string)).toEqual([
      { type: 'text', content: 'Be brief.' },
    ]);
    expect(JSON.parse(root.attributes['gen_ai.input.messages'] as string)).toEqual([
      {
        role: 'user',
        parts: [
          { type: 'text', content: 'What is in the picture?' },
          { type: 'blob', modality: 'image', mime_type: 'image/png', size: 4000 },
        ],
      },
    ]);
    expect(JSON.parse(root.attributes['gen_ai.output.messages'] as string)).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'A cat.' }], finish_reason: 'stop' },
    ]);
  });

  it('marks a failed attempt and a vendor failure as errors, a client refusal by its type only', async () => {
    const trace = exchange(runtime());
    trace.exchangeStarted(request, model, auth);
    trace.attemptStarted({ vendor: 'anthropic', credential: 'main', number: 1, upstreamModel: 'claude-x' });
    trace.attemptFailed(new GatewayError('upstream_server_error', 'boom'));
    trace.exchangeFailed(new GatewayError('upstream_server_error', 'boom'));
    trace.responseEnded(502);
    const [attempt, root] = await finished();
    expect(attempt!.status.code).toBe(2);
    expect(attempt!.attributes['error.type']).toBe('upstream_server_error');
    expect(root!.status.code).toBe(2);

    exporter.reset();
    const refused = exchange(runtime());
    refused.exchangeFailed(new GatewayError('invalid_request', 'bad'));
    refused.responseEnded(400);
    const [span] = await finished();
    expect(span!.status.code).toBe(0);
    expect(span!.attributes['error.type']).toBe('invalid_request');
  });

  it('makes no spans and passes no trace context on when only metrics are on', async () => {
    const trace = exchange({
      tracer: new ProxyTracerProvider().getTracer('noop'),
      tracing: false,
      metrics: undefined,
      captureMessageContent: false,
    });
    trace.exchangeStarted(request, model, auth);
    trace.attemptStarted({ vendor: 'anthropic', credential: 'main', number: 1, upstreamModel: 'claude-x' });
    trace.responseEnded(200);
    trace.replyFinished(reply().response, emptyUsage(), 'ok');
    expect(trace.propagationHeaders).toBeUndefined();
    expect(await finished()).toHaveLength(0);
  });
});
