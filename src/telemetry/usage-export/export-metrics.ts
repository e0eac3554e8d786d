import { Counter, Gauge, type Registry } from 'prom-client';

/** The usage export's series, labelled by sink name (a handful the operator configured). */
export class UsageExportMetrics {
  readonly exported: Counter<'sink'>;
  readonly failures: Counter<'sink'>;
  readonly lag: Gauge<'sink'>;
  readonly lastSuccess: Gauge<'sink'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.exported = new Counter({
      name: 'tollgate_usage_export_events_total',
      help: 'Usage events a sink accepted (a webhook receiver answered 2xx, or the file was fsynced).',
      labelNames: ['sink'],
      registers,
    });
    this.failures = new Counter({
      name: 'tollgate_usage_export_failures_total',
      help: 'Batches a sink did not accept after its attempts; they are sent again.',
      labelNames: ['sink'],
      registers,
    });
    this.lag = new Gauge({
      name: 'tollgate_usage_export_lag_seconds',
      help: 'Age of the oldest settled record a sink has not accepted yet (0: caught up to the settle delay).',
      labelNames: ['sink'],
      registers,
    });
    this.lastSuccess = new Gauge({
      name: 'tollgate_usage_export_last_success_timestamp_seconds',
      help: 'When a sink last accepted a batch (Unix seconds).',
      labelNames: ['sink'],
      registers,
    });
  }
}
