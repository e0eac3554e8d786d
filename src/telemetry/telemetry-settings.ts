/** How the batch span processor queues and sends spans (OTEL_BSP_*), bounded so a slow collector costs memory, not requests. */
export interface SpanBatchSettings {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMillis: number;
  exportTimeoutMillis: number;
}

export interface TelemetrySettings {
  /** Traces over OTLP, when an endpoint is set and OTEL_TRACES_EXPORTER is not `none`. */
  traces: { sampler: SamplerSetting; batch: SpanBatchSettings } | undefined;
  /** GenAI metrics over OTLP, when an endpoint is set and OTEL_METRICS_EXPORTER is not `none`. */
  metrics: { exportIntervalMillis: number; exportTimeoutMillis: number } | undefined;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and replies recorded on the request span. */
  captureMessageContent: boolean;
}

export type Environment = Readonly<Record<string, string | undefined>>;

/** A setting of the OTEL_* variables the gateway cannot honour: refused at start, like any other bad setting. */
export class TelemetrySettingsError extends Error {}

/**
 * The standard OpenTelemetry variables, as the SDK specification reads them. Plain data, no SDK import: a gateway
 * with telemetry off never loads the SDK. The OTLP exporters read the
 * endpoint, headers, timeout and TLS variables themselves; this decides whether there is anything to export and
 * reads what sdk-trace 3 and sdk-metrics leave to the application (sampler, batch and interval settings).
 */
export function telemetrySettings(env: Environment): TelemetrySettings {
  const off = { traces: undefined, metrics: undefined, captureMessageContent: false };
  if (flag(env.OTEL_SDK_DISABLED)) return off;
  const anyEndpoint = present(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const tracesOn = (anyEndpoint || present(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) && exporterOn(env, 'TRACES');
  const metricsOn = (anyEndpoint || present(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)) && exporterOn(env, 'METRICS');
  if (tracesOn) assertHttpProtobuf(env, 'TRACES');
  if (metricsOn) assertHttpProtobuf(env, 'METRICS');
  return {
    traces: tracesOn
      ? {
          sampler: samplerSetting(env),
          batch: {
            maxQueueSize: positive(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048),
            maxExportBatchSize: positive(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
            scheduledDelayMillis: positive(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000),
            exportTimeoutMillis: positive(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000),
          },
        }
      : undefined,
    metrics: metricsOn
      ? {
          exportIntervalMillis: positive(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000),
          exportTimeoutMillis: positive(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000),
        }
      : undefined,
    captureMessageContent: (tracesOn || metricsOn) && flag(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
  };
}

function present(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== '';
}

function flag(value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true';
}

/** OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER: `otlp` (the default) or `none`; others are not built in. */
function exporterOn(env: Environment, signal: 'TRACES' | 'METRICS'): boolean {
  const name = `OTEL_${signal}_EXPORTER`;
  const value = env[name]?.trim().toLowerCase();
  if (value === undefined || value === '') return true;
  const exporters = value.split(',').map((part) => part.trim());
  if (exporters.includes('none')) return false;
  const unknown = exporters.filter((part) => part !== 'otlp');
  if (unknown.length > 0)
    throw new TelemetrySettingsError(`${name}=${value}: Tollgate exports over OTLP only (set otlp or none).`);
  return true;
}

function assertHttpProtobuf(env: Environment, signal: 'TRACES' | 'METRICS'): void {
  for (const name of [`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`, 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    if (value !== 'http/protobuf')
      throw new TelemetrySettingsError(
        `${name}=${value}: Tollgate sends OTLP over HTTP/protobuf only (http/protobuf).`,
      );
    return;
  }
}

function positive(env: Environment, name: string, fallback: number): number {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0)
    throw new TelemetrySettingsError(`${name}=${text}: a positive whole number is expected.`);
  return value;
}

/** OTEL_TRACES_SAMPLER's names (the specification's), with OTEL_TRACES_SAMPLER_ARG's ratio where one applies. */
export type SamplerSetting =
  | { name: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { name: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

const PLAIN_SAMPLERS = new Set(['always_on', 'always_off', 'parentbased_always_on', 'parentbased_always_off']);

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on: a client's sampled flag is kept). */
export function samplerSetting(env: Environment): SamplerSetting {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  if (PLAIN_SAMPLERS.has(name)) return { name } as SamplerSetting;
  if (name !== 'traceidratio' && name !== 'parentbased_traceidratio')
    throw new TelemetrySettingsError(
      `OTEL_TRACES_SAMPLER=${name}: expected always_on, always_off, traceidratio or their parentbased_ forms.`,
    );
  const text = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = text === undefined || text === '' ? 1 : Number(text);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw new TelemetrySettingsError(`OTEL_TRACES_SAMPLER_ARG=${text}: a ratio between 0 and 1 is expected.`);
  return { name, ratio };
}
