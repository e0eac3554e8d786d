import { describe, expect, it } from 'vitest';
import { samplerSetting, TelemetrySettingsError, telemetrySettings } from './telemetry-settings.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('telemetry settings from the OTEL_* variables', () => {
  it('is off without an OTLP endpoint, whatever else is set', () => {
    expect(telemetrySettings({})).toEqual({ traces: undefined, metrics: undefined, captureMessageContent: false });
    const noEndpoint = telemetrySettings({
      OTEL_SERVICE_NAME: 'x',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    });
    expect(noEndpoint).toEqual({ traces: undefined, metrics: undefined, captureMessageContent: false });
    expect(telemetrySettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'true' }).traces).toBeUndefined();
  });

  it('turns traces and metrics on with the shared endpoint, with the specification defaults', () => {
    const settings = telemetrySettings(ENDPOINT);
    expect(settings.traces).toEqual({
      sampler: { name: 'parentbased_always_on' },
      batch: { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 5000, exportTimeoutMillis: 30_000 },
    });
    expect(settings.metrics).toEqual({ exportIntervalMillis: 60_000, exportTimeoutMillis: 30_000 });
    expect(settings.captureMessageContent).toBe(false);
  });

  it('takes each signal on its own endpoint, and turns one off with `none`', () => {
    const tracesOnly = telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' });
    expect(tracesOnly.traces).toBeDefined();
    expect(tracesOnly.metrics).toBeUndefined();
    const metricsOnly = telemetrySettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' });
    expect(metricsOnly.traces).toBeUndefined();
    expect(metricsOnly.metrics).toBeDefined();
    expect(telemetrySettings({ ...ENDPOINT, OTEL_METRICS_EXPORTER: 'none' }).metrics).toBeUndefined();
  });

  it('captures message content only when asked in so many words', () => {
    const on = { ...ENDPOINT, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' };
    expect(telemetrySettings(on).captureMessageContent).toBe(true);
    for (const value of ['1', 'yes', 'false', ''])
      expect(
        telemetrySettings({ ...ENDPOINT, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: value })
          .captureMessageContent,
      ).toBe(false);
  });

  it('reads the batch and interval variables, and refuses what is not a positive whole number', () => {
    const settings = telemetrySettings({
      ...ENDPOINT,
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_SCHEDULE_DELAY: '250',
      OTEL_METRIC_EXPORT_INTERVAL: '1000',
    });
    expect(settings.traces?.batch.maxQueueSize).toBe(100);
    expect(settings.traces?.batch.scheduledDelayMillis).toBe(250);
    expect(settings.metrics?.exportIntervalMillis).toBe(1000);
    expect(() => telemetrySettings({ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: '-1' })).toThrow(TelemetrySettingsError);
  });

  it('refuses an exporter or protocol the gateway does not ship', () => {
    expect(() => telemetrySettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTLP only/);
    expect(() => telemetrySettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/http\/protobuf/);
    expect(telemetrySettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }).traces).toBeDefined();
  });

  it('reads the sampler by its specification names', () => {
    expect(samplerSetting({ OTEL_TRACES_SAMPLER: 'always_off' })).toEqual({ name: 'always_off' });
    expect(
      samplerSetting({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    ).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 });
    expect(samplerSetting({ OTEL_TRACES_SAMPLER: 'traceidratio' })).toEqual({ name: 'traceidratio', ratio: 1 });
    expect(() => samplerSetting({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(
      TelemetrySettingsError,
    );
    expect(() => samplerSetting({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(TelemetrySettingsError);
  });
});
