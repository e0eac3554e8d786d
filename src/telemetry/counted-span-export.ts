import { type Context, TraceFlags } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { SpanBatchSettings } from './telemetry-settings.js';

export type SpanDropReason = 'queue_full' | 'export_failed';

/**
 * The SDK's BatchSpanProcessor (bounded queue, batches sent off the request path), with the spans it loses counted:
 * the processor drops a span when its queue is full and only says so in a debug line, and a failed export is gone
 * too. The processor keeps its queue private, so this mirrors its length: a span is queued when it ends (sampled)
 * and leaves the queue when the processor hands its batch to the exporter, exactly where the processor counts.
 */
export function countedBatchProcessor(
  exporter: SpanExporter,
  batch: SpanBatchSettings,
  dropped: (reason: SpanDropReason, count: number) => void,
): SpanProcessor {
  const queue = { length: 0 };
  const counting: SpanExporter = {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
      queue.length = Math.max(0, queue.length - spans.length);
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) dropped('export_failed', spans.length);
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush === undefined ? {} : { forceFlush: () => exporter.forceFlush!() }),
  };
  const inner = new BatchSpanProcessor({ exporter: counting, ...batch });
  return {
    onStart(span: Span, parentContext: Context): void {
      inner.onStart(span, parentContext);
    },
    onEnd(span: ReadableSpan): void {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0) {
        if (queue.length >= batch.maxQueueSize) dropped('queue_full', 1);
        else queue.length += 1;
      }
      inner.onEnd(span);
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
  };
}
