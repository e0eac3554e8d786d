import { ProxyTracerProvider } from '@opentelemetry/api';
import { setGlobalErrorHandler } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';
import { countedBatchProcessor } from './counted-span-export.js';
import { ExchangeTelemetry, type ExchangeStart, type TelemetryRuntime } from './exchange-telemetry.js';
import { routeOperation } from './genai-attributes.js';
import { GenAiMetrics } from './genai-metrics.js';
import type { SamplerSetting, TelemetrySettings } from './telemetry-settings.js';

/** The most a shutdown waits for the last spans and metrics: a collector that is gone must not hold the exit. */
const SHUTDOWN_FLUSH_MS = 5_000;
/** A collector that stays unreachable is reported once per this interval, not once per batch. */
const ERROR_REPORT_INTERVAL_MS = 60_000;

export interface Telemetry {
  /** The telemetry of a request on `route`; undefined for routes that call no model. */
  startExchange(start: ExchangeStart): ExchangeTelemetry | undefined;
  /** Exports what is queued (bounded by a few seconds) and stops. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /** Where dropped spans are counted (`tollgate_telemetry_dropped_spans_total`). */
  metrics: GatewayMetrics;
  /** Told of export failures, at most once a minute. */
  onExportError: (error: unknown) => void;
  serviceVersion?: string;
}

/**
 * The OpenTelemetry SDK as the gateway uses it: OTLP/HTTP protobuf exporters configured by the standard variables,
 * spans through a bounded batch processor, the GenAI metrics through a periodic reader. Nothing is registered
 * globally: the gateway passes its tracer explicitly, so no context manager or global propagation runs per request.
 * Undefined when the settings turn both signals off (the gateway then never loads the SDK).
 */
export function startTelemetry(settings: TelemetrySettings, options: TelemetryOptions): Telemetry | undefined {
  if (settings.traces === undefined && settings.metrics === undefined) return undefined;
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': 'tollgate',
        ...(options.serviceVersion === undefined ? {} : { 'service.version': options.serviceVersion }),
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults above.
    .merge(detectResources({ detectors: [envDetector] }));
  let lastReport = Number.NEGATIVE_INFINITY;
  setGlobalErrorHandler((error) => {
    const now = Date.now();
    if (now - lastReport < ERROR_REPORT_INTERVAL_MS) return;
    lastReport = now;
    options.onExportError(error);
  });

  const tracerProvider =
    settings.traces === undefined
      ? undefined
      : new TracerProvider({
          resource,
          sampler: samplerOf(settings.traces.sampler),
          spanProcessors: [
            countedBatchProcessor(new OTLPTraceExporter(), settings.traces.batch, (reason, count) =>
              options.metrics.telemetrySpansDropped(reason, count),
            ),
          ],
        });
  const meterProvider =
    settings.metrics === undefined
      ? undefined
      : new MeterProvider({
          resource,
          readers: [
            new PeriodicExportingMetricReader({
              exporter: new OTLPMetricExporter(),
              exportIntervalMillis: settings.metrics.exportIntervalMillis,
              exportTimeoutMillis: Math.min(
                settings.metrics.exportTimeoutMillis,
                settings.metrics.exportIntervalMillis,
              ),
            }),
          ],
        });
  const runtime: TelemetryRuntime = {
    // A tracer that makes no spans when only metrics are on: requests still get their metrics, and no trace work.
    tracer: (tracerProvider ?? new ProxyTracerProvider()).getTracer('tollgate', options.serviceVersion),
    tracing: tracerProvider !== undefined,
    metrics: meterProvider === undefined ? undefined : new GenAiMetrics(meterProvider.getMeter('tollgate')),
    captureMessageContent: settings.captureMessageContent,
  };
  return {
    startExchange(start) {
      const operation = routeOperation(start.route);
      return operation === undefined ? undefined : new ExchangeTelemetry(runtime, start, operation);
    },
    async shutdown() {
      const flushed = Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS);
      });
      await Promise.race([flushed, deadline]);
      clearTimeout(timer);
    },
  };
}

function samplerOf(setting: SamplerSetting): Sampler {
  switch (setting.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(setting.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(setting.ratio) });
  }
}
