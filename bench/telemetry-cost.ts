import type { CanonicalRequest } from '../src/canonical/request.js';
import { emptyUsage } from '../src/canonical/usage.js';
import { ModelCatalog } from '../src/catalog/model-catalog.js';
import { ResponseAccumulator } from '../src/canonical/accumulate.js';
import type { AuthenticatedKey } from '../src/keys/key-service.js';
import { NO_METRICS } from '../src/observability/gateway-metrics.js';
import { startTelemetry } from '../src/telemetry/telemetry.js';
import { telemetrySettings } from '../src/telemetry/telemetry-settings.js';
import { startOtlpSink } from './otlp-sink.js';

export interface TelemetryCost {
  /** CPU (user + system) of one request's telemetry: its four spans, their export, its metric records; µs. */
  microsPerRequest: number;
  requests: number;
}

const REQUESTS = 20_000;
const WARMUP = 2_000;

/**
 * `--otel`: what tracing and OTLP metrics cost one request, measured in the bench process on the real SDK and
 * exporters, against the sink: the calls the pipeline makes for a streamed request (span, admission, one upstream
 * attempt with its traceparent, settlement, the reply), then the batches encoded and sent. Apart from the HTTP
 * path, so the figure is not lost in a busy machine's noise around a whole request.
 */
export async function measureTelemetryCost(): Promise<TelemetryCost> {
  const sink = await startOtlpSink();
  const telemetry = startTelemetry(
    telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_BSP_SCHEDULE_DELAY: '200' }),
    { metrics: NO_METRICS, onExportError: () => {} },
  )!;
  const model = new ModelCatalog().resolve('alpha-sonnet-5');
  const auth = { key: { id: 'key_bench' }, organisation: { id: 'acct_bench' } } as AuthenticatedKey;
  const request: CanonicalRequest = {
    model: 'alpha-sonnet-5',
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    sampling: { temperature: 0.5 },
    maxOutputTokens: 256,
    stream: true,
    extensions: {},
    extensionsProtocol: 'anthropic-messages',
  };
  const reply = new ResponseAccumulator();
  reply.apply({ type: 'response-start', id: 'msg_bench', model: 'claude-bench', created: 1 });
  reply.apply({ type: 'finish', reason: 'stop', rawReason: 'end_turn' });
  const usage = { ...emptyUsage(), inputTokens: 20, outputTokens: 40 };
  const settled = {
    settled: true as const,
    chargedNano: 1_000n,
    unbilledNano: 0n,
    unbilledTokens: 0,
    freeTokensUsed: 0,
  };

  async function one(index: number): Promise<void> {
    const exchange = telemetry.startExchange({
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      method: 'POST',
      route: '/v1/messages',
      path: '/v1/messages',
      requestId: `req_${index}`,
    })!;
    exchange.exchangeStarted(request, model, auth);
    await exchange.admission(async () => undefined);
    exchange.attemptStarted({ vendor: 'anthropic', credential: 'main', number: 1, upstreamModel: 'claude-bench' });
    exchange.attemptAnswered(200, 'req_vendor');
    exchange.answeredBy(model, 'req_vendor');
    exchange.firstOutput(0.01);
    await exchange.settlement('ok', async () => settled);
    exchange.replyFinished(reply.response, usage, 'ok');
    exchange.responseEnded(200);
  }

  for (let index = 0; index < WARMUP; index++) await one(index);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = process.cpuUsage();
  for (let index = 0; index < REQUESTS; index++) {
    await one(index);
    // Let the batch processor's timer run between requests, as it would between a gateway's event-loop turns.
    if (index % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
  }
  await telemetry.shutdown();
  const used = process.cpuUsage(before);
  await sink.close();
  return { microsPerRequest: (used.user + used.system) / REQUESTS, requests: REQUESTS };
}
