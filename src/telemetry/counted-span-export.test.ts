import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import {
  AlwaysOffSampler,
  createAlwaysRecordSampler,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { countedBatchProcessor, type SpanDropReason } from './counted-span-export.js';

/** An exporter whose batches wait until released, then succeed or fail: a slow or broken collector. */
function heldExporter(code: ExportResultCode) {
  const held: Array<() => void> = [];
  const exported: ReadableSpan[][] = [];
  const exporter: SpanExporter = {
    export(spans, done: (result: ExportResult) => void) {
      exported.push(spans);
      held.push(() => done({ code }));
    },
    shutdown: async () => {},
  };
  const release = () => {
    for (const done of held.splice(0)) done();
  };
  return { exporter, exported, release };
}

function counter() {
  const counts: Record<SpanDropReason, number> = { queue_full: 0, export_failed: 0 };
  const dropped = (reason: SpanDropReason, count: number) => {
    counts[reason] += count;
  };
  return { counts, dropped };
}

const BATCH = { maxQueueSize: 4, maxExportBatchSize: 2, scheduledDelayMillis: 10, exportTimeoutMillis: 30_000 };

describe('the counted batch span processor', () => {
  it('counts the spans a full queue turns away, and exports the rest', async () => {
    const { exporter, exported, release } = heldExporter(ExportResultCode.SUCCESS);
    const { counts, dropped } = counter();
    const provider = new TracerProvider({ spanProcessors: [countedBatchProcessor(exporter, BATCH, dropped)] });
    const tracer = provider.getTracer('test');
    // The first batch (2 spans) goes out and is held; 4 more fill the queue; the last 4 are turned away.
    for (let index = 0; index < 10; index++) tracer.startSpan(`span ${index}`).end();
    expect(counts.queue_full).toBe(4);
    expect(exported.flat()).toHaveLength(2);
    release();
    const flushed = provider.forceFlush();
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await flushed;
    expect(exported.flat().map((span) => span.name)).toEqual([
      'span 0',
      'span 1',
      'span 2',
      'span 3',
      'span 4',
      'span 5',
    ]);
    expect(counts).toEqual({ queue_full: 4, export_failed: 0 });
  });

  it('counts the spans of a failed export', async () => {
    const { exporter, release } = heldExporter(ExportResultCode.FAILED);
    const { counts, dropped } = counter();
    const provider = new TracerProvider({ spanProcessors: [countedBatchProcessor(exporter, BATCH, dropped)] });
    provider.getTracer('test').startSpan('lost').end();
    const flushed = provider.forceFlush().catch(() => undefined);
    release();
    await flushed;
    expect(counts).toEqual({ queue_full: 0, export_failed: 1 });
  });

  it('leaves recorded but unsampled spans out of the queue, as the processor does', () => {
    const { exporter, exported } = heldExporter(ExportResultCode.SUCCESS);
    const { counts, dropped } = counter();
    const provider = new TracerProvider({
      sampler: createAlwaysRecordSampler(new AlwaysOffSampler()),
      spanProcessors: [countedBatchProcessor(exporter, BATCH, dropped)],
    });
    const tracer = provider.getTracer('test');
    for (let index = 0; index < 10; index++) tracer.startSpan('unsampled').end();
    expect(counts.queue_full).toBe(0);
    expect(exported).toHaveLength(0);
  });
});
