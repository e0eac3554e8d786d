import type { Attributes, Histogram, Meter } from '@opentelemetry/api';
import { GEN_AI } from './genai-attributes.js';

/** The conventions' advised bucket boundaries for `gen_ai.client.token.usage` (powers of 4). */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** … and for `gen_ai.client.operation.duration`, in seconds. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** The GenAI client metrics, one record per client request, exported over OTLP beside the Prometheus endpoint. */
export class GenAiMetrics {
  private readonly tokenUsage: Histogram;
  private readonly duration: Histogram;

  constructor(meter: Meter) {
    this.tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Tokens used by a GenAI request, by token type (input includes cached prompt tokens).',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
    this.duration = meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'Duration of a GenAI request through the gateway, from its arrival to the end of its response.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
  }

  /** `attributes`: operation, provider, request and response model, and `error.type` for a failed request. */
  record(attributes: Attributes, seconds: number, tokens: { input: number; output: number } | undefined): void {
    this.duration.record(seconds, attributes);
    if (tokens === undefined) return;
    this.tokenUsage.record(tokens.input, { ...attributes, [GEN_AI.tokenType]: 'input' });
    this.tokenUsage.record(tokens.output, { ...attributes, [GEN_AI.tokenType]: 'output' });
  }
}
