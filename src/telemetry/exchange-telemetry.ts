import type { IncomingHttpHeaders } from 'node:http';
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { CanonicalResponse } from '../canonical/accumulate.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { SettlementOutcome } from '../billing/billing-service.js';
import { formatUsd } from '../billing/money.js';
import type { ExchangeTrace } from '../pipeline/exchange-trace.js';
import type { Outcome } from '../pipeline/relayed-events.js';
import type { UpstreamAttempt } from '../providers/types.js';
import { totalInputTokens } from '../canonical/usage.js';
import {
  ERROR_TYPE,
  errorType,
  GEN_AI,
  providerName,
  requestAttributes,
  responseAttributes,
  type RouteOperation,
  usageAttributes,
} from './genai-attributes.js';
import type { GenAiMetrics } from './genai-metrics.js';
import { inputMessageAttributes, outputMessageAttributes } from './message-content.js';

/** What every request's telemetry shares: the tracer (a no-op one when traces are off), metrics, the content switch. */
export interface TelemetryRuntime {
  tracer: Tracer;
  /** Traces are exported: the client's trace context is continued and passed on upstream. */
  tracing: boolean;
  metrics: GenAiMetrics | undefined;
  captureMessageContent: boolean;
}

/** The HTTP facts of a request, known before its body is read. */
export interface ExchangeStart {
  headers: IncomingHttpHeaders;
  method: string;
  /** The route pattern (`/v1/chat/completions`, `/v1beta/models/:model:generateContent`). */
  route: string;
  /** The path without its query string: a Google client may send its key as `?key=`. */
  path: string;
  requestId: string;
}

const propagator = new W3CTraceContextPropagator();
/** How long a span whose response has closed waits for its settlement before it is ended anyway. */
const SETTLEMENT_WAIT_MS = 60_000;

/**
 * One client request's span, its children and its GenAI metrics. The span ends once the response has closed and
 * the pipeline is done with the request (a stream the client left is still settled after its socket closed, and
 * its cost belongs on the span). Never throws into the request: the SDK's span calls do not throw.
 */
export class ExchangeTelemetry implements ExchangeTrace {
  private readonly span: Span;
  private readonly context: Context;
  private readonly startedAt = performance.now();
  private readonly metricAttributes: Attributes;
  private attempt: Span | undefined;
  private pipelineBusy = false;
  private responseClosed = false;
  private ended = false;
  private failure: string | undefined;
  private tokens: { input: number; output: number } | undefined;
  private settlementWait: NodeJS.Timeout | undefined;
  propagationHeaders: Record<string, string> | undefined;

  constructor(
    private readonly runtime: TelemetryRuntime,
    start: ExchangeStart,
    private readonly operation: RouteOperation,
  ) {
    // A client's `traceparent` (and `tracestate`) makes this request a child of its span.
    const parent = runtime.tracing
      ? propagator.extract(ROOT_CONTEXT, start.headers, defaultTextMapGetter)
      : ROOT_CONTEXT;
    // A server span: the gateway serves the client's call; the calls to the vendor are its client spans.
    this.span = runtime.tracer.startSpan(
      operation.operation,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [GEN_AI.operationName]: operation.operation,
          'http.request.method': start.method,
          'http.route': start.route,
          'url.path': start.path,
          'tollgate.request_id': start.requestId,
          'tollgate.route': start.route,
          'tollgate.client.protocol': operation.protocol,
        },
      },
      parent,
    );
    this.context = trace.setSpan(ROOT_CONTEXT, this.span);
    this.metricAttributes = { [GEN_AI.operationName]: operation.operation };
  }

  exchangeStarted(request: CanonicalRequest, model: CatalogModel, auth: AuthenticatedKey): void {
    this.pipelineBusy = true;
    const provider = providerName(model.vendor);
    this.span.updateName(`${this.operation.operation} ${request.model}`);
    this.span.setAttributes({
      ...requestAttributes(request),
      [GEN_AI.providerName]: provider,
      [GEN_AI.system]: provider,
      // Ids only: the key's secret never reaches the gateway's records, nor its hash a span.
      'tollgate.organisation.id': auth.organisation.id,
      'tollgate.key.id': auth.key.id,
    });
    if (this.runtime.captureMessageContent) this.span.setAttributes(inputMessageAttributes(request));
    this.metricAttributes[GEN_AI.requestModel] = request.model;
    this.metricAttributes[GEN_AI.providerName] = provider;
  }

  admission<T>(admit: () => Promise<T>): Promise<T> {
    return this.inChild('tollgate.admission', {}, admit);
  }

  attemptStarted(attempt: UpstreamAttempt): void {
    this.attempt?.end();
    const span = this.runtime.tracer.startSpan(
      `upstream ${attempt.vendor}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI.providerName]: providerName(attempt.vendor),
          'http.request.method': 'POST',
          'tollgate.upstream.model': attempt.upstreamModel,
          'tollgate.upstream.credential': attempt.credential,
          'tollgate.upstream.attempt': attempt.number,
        },
      },
      this.context,
    );
    this.attempt = span;
    if (!this.runtime.tracing) return;
    const headers: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
    this.propagationHeaders = headers;
  }

  attemptAnswered(status: number, vendorRequestId: string | undefined): void {
    const span = this.attempt;
    if (span === undefined) return;
    span.setAttribute('http.response.status_code', status);
    if (vendorRequestId !== undefined) span.setAttribute('tollgate.upstream.request_id', vendorRequestId);
  }

  attemptFailed(error: unknown): void {
    const span = this.attempt;
    if (span === undefined) return;
    failSpan(span, error);
    span.end();
    this.attempt = undefined;
  }

  answeredBy(model: CatalogModel, vendorRequestId: string | undefined): void {
    const provider = providerName(model.vendor);
    this.span.setAttributes({ 'tollgate.model': model.id, [GEN_AI.providerName]: provider, [GEN_AI.system]: provider });
    if (vendorRequestId !== undefined) this.span.setAttribute('tollgate.upstream.request_id', vendorRequestId);
    this.metricAttributes[GEN_AI.providerName] = provider;
  }

  firstOutput(seconds: number): void {
    this.span.setAttribute(GEN_AI.responseTimeToFirstChunk, seconds);
  }

  settlement(outcome: Outcome, settle: () => Promise<SettlementOutcome>): Promise<SettlementOutcome> {
    return this.inChild('tollgate.settlement', { 'tollgate.outcome': outcome }, async (span) => {
      let result: SettlementOutcome;
      try {
        result = await settle();
      } catch (error) {
        // Refused by the store with no journal to take it: the hold stays for the sweeper.
        span.setAttribute('tollgate.settlement.state', 'failed');
        throw error;
      }
      if (!result.settled) {
        span.setAttribute('tollgate.settlement.state', result.reason);
        return result;
      }
      // Exact: integer nano-USD, and USD as the decimal string the ledger would print (never a float).
      const cost = {
        'tollgate.cost.nano_usd': Number(result.chargedNano),
        'tollgate.cost.usd': formatUsd(result.chargedNano),
      };
      span.setAttributes({ ...cost, 'tollgate.settlement.state': 'settled' });
      this.span.setAttributes(cost);
      if (result.unbilledTokens > 0) this.span.setAttribute('tollgate.unbilled_tokens', result.unbilledTokens);
      return result;
    });
  }

  replyFinished(response: CanonicalResponse, usage: CanonicalUsage, outcome: Outcome): void {
    this.span.setAttributes({
      ...responseAttributes(response),
      ...usageAttributes(usage),
      'tollgate.outcome': outcome,
    });
    if (response.model !== '') this.metricAttributes[GEN_AI.responseModel] = response.model;
    if (this.runtime.captureMessageContent) this.span.setAttributes(outputMessageAttributes(response));
    this.tokens = { input: totalInputTokens(usage), output: usage.outputTokens };
    if (outcome === 'upstream_error') this.fail('upstream_error');
    // The answering attempt's span covers its whole reply.
    this.attempt?.end();
    this.attempt = undefined;
    this.pipelineDone();
  }

  exchangeFailed(error: unknown): void {
    const type = errorType(error);
    this.span.setAttribute('tollgate.outcome', 'refused');
    const status = (error as { status?: unknown } | null)?.status;
    // Refusals the client caused (4xx) keep the span's status unset, as HTTP's conventions say of a server span;
    // their error type is still named. 5xx are failures.
    if (typeof status !== 'number' || status >= 500) this.fail(type);
    else {
      this.failure = type;
      this.span.setAttribute(ERROR_TYPE, type);
    }
    this.attempt?.end();
    this.attempt = undefined;
    this.pipelineDone();
  }

  /** The client's response is over (sent, or its socket closed). */
  responseEnded(statusCode: number): void {
    this.responseClosed = true;
    this.span.setAttribute('http.response.status_code', statusCode);
    if (statusCode >= 500) this.fail(this.failure ?? String(statusCode));
    else if (statusCode >= 400 && this.failure === undefined) {
      // Refused before the pipeline (a bad key, a rate limit): the status is all there is to name it by.
      this.failure = String(statusCode);
      this.span.setAttribute(ERROR_TYPE, this.failure);
    }
    if (!this.pipelineBusy) {
      this.end();
      return;
    }
    // A reply never iterated leaves no settlement to wait for; its span still ends.
    this.settlementWait = setTimeout(() => this.end(), SETTLEMENT_WAIT_MS);
    this.settlementWait.unref();
  }

  private pipelineDone(): void {
    this.pipelineBusy = false;
    if (this.responseClosed) this.end();
  }

  private fail(type: string): void {
    this.failure = type;
    this.span.setAttribute(ERROR_TYPE, type);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.settlementWait !== undefined) clearTimeout(this.settlementWait);
    this.attempt?.end();
    this.span.end();
    const metrics = this.runtime.metrics;
    if (metrics === undefined) return;
    const attributes =
      this.failure === undefined ? this.metricAttributes : { ...this.metricAttributes, [ERROR_TYPE]: this.failure };
    metrics.record(attributes, (performance.now() - this.startedAt) / 1000, this.tokens);
  }

  private async inChild<T>(name: string, attributes: Attributes, run: (span: Span) => Promise<T>): Promise<T> {
    const span = this.runtime.tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, this.context);
    try {
      return await run(span);
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  }
}

function failSpan(span: Span, error: unknown): void {
  const type = errorType(error);
  span.setAttribute(ERROR_TYPE, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}
