import type { Registry } from 'prom-client';
import { randomHex } from '../../ids/random-hex.js';
import type { UsageExportRepository } from '../../storage/usage-export-types.js';
import { WebhookSender } from '../webhooks/webhook-sender.js';
import { UsageExportMetrics } from './export-metrics.js';
import { NdjsonFileSink } from './ndjson-file-sink.js';
import { SinkExporter } from './sink-exporter.js';
import type { UsageExportSettings } from './usage-export-settings.js';
import type { UsageSink } from './usage-sink.js';
import { WebhookUsageSink } from './webhook-usage-sink.js';

export interface UsageExportLog {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface RunningUsageExport {
  /** Every sink exports what is there now; resolves with the events accepted per sink. */
  flush(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** Starts one exporter per configured sink (none: nothing runs). */
export function startUsageExport(
  settings: UsageExportSettings,
  store: UsageExportRepository,
  options: { registry: Registry; log: UsageExportLog; now: () => number },
): RunningUsageExport {
  if (settings.sinks.length === 0) return { flush: async () => ({}), close: async () => {} };
  const metrics = new UsageExportMetrics(options.registry);
  const owner = `instance-${randomHex(8)}`;
  const senders: WebhookSender[] = [];
  const sinks: { sink: UsageSink; exporter: SinkExporter }[] = settings.sinks.map((sinkSettings) => {
    let sink: UsageSink;
    if (sinkSettings.type === 'webhook') {
      const sender = new WebhookSender({
        policy: { allowHttpLoopback: settings.allowHttpLoopback },
        maxAttempts: sinkSettings.maxAttempts,
        baseDelayMs: 500,
        maxDelayMs: 30_000,
        timeoutMs: sinkSettings.timeoutMs,
        // Batches of one sink go one at a time (the cursor is sequential); a little room for sinks sharing nothing.
        concurrency: 2,
      });
      senders.push(sender);
      sink = new WebhookUsageSink(sinkSettings.name, sinkSettings, sender);
    } else {
      sink = new NdjsonFileSink(sinkSettings.name, sinkSettings.directory, options.now);
    }
    // Sinks with no series yet read 0, so a dashboard sees the sink before its first batch.
    metrics.exported.inc({ sink: sink.name }, 0);
    metrics.failures.inc({ sink: sink.name }, 0);
    const exporter = new SinkExporter({
      sink,
      store,
      owner,
      batchSize: sinkSettings.batchSize,
      flushIntervalMs: sinkSettings.flushIntervalMs,
      settleDelayMs: settings.settleDelayMs,
      metrics,
      now: options.now,
      // The message names the receiver's answer or the network error; never the URL's query, the secret or a body.
      onFailure: (name, message) =>
        options.log.warn({ sink: name, kind: sink.kind, reason: message }, `usage export: sink ${name} failed`),
      onStoreError: (name, error) =>
        options.log.error({ sink: name, err: error }, `usage export: sink ${name} could not read or move its cursor`),
    });
    exporter.start();
    return { sink, exporter };
  });
  return {
    async flush() {
      const counts: Record<string, number> = {};
      for (const { sink, exporter } of sinks) counts[sink.name] = await exporter.flush();
      return counts;
    },
    async close() {
      // Senders first: a retry waiting in backoff gives up at once, so closing never waits out a long backoff.
      await Promise.all(senders.map((sender) => sender.close()));
      await Promise.all(sinks.map(({ exporter }) => exporter.stop()));
      await Promise.all(sinks.map(({ sink }) => sink.close()));
    },
  };
}
