import { ResponseAccumulator } from '../canonical/accumulate.js';
import { estimateRequestInputTokens, tokenizerLoaded } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';
import type { BillingService, SettlementOutcome } from '../billing/billing-service.js';
import { outputSliceOf } from '../billing/priced-model.js';
import type { HoldCheckpoint, Reservation } from '../storage/billing-types.js';
import type { ChatInput } from './chat-pipeline.js';
import { OutputGate } from './output-gate.js';
import { RelayedEvents, type Outcome } from './relayed-events.js';
import type { ReplySettlement } from './reply-settlement.js';
import { requestOutputLimit } from './request-limits.js';

/**
 * A reply relayed to the client against its hold: the OutputGate grows the hold a slice at a time as output arrives
 * (or cuts the reply), the periodic batch writes checkpoints a sweeper bills if this instance dies, and the reply is
 * settled through `ReplySettlement` once it is over.
 */
export class MeteredRelay {
  constructor(
    private readonly billing: BillingService,
    private readonly metrics: GatewayMetrics,
    private readonly now: () => number,
    private readonly settlement: ReplySettlement,
  ) {}

  /**
   * The reply's events as they come, folded on the way; settled once the upstream is over, failed, or the
   * consumer left. A hand-written iterator rather than an async generator: a generator's yield costs several
   * promises and queue entries per event, a large share of what a streamed request allocated.
   */
  relay(
    input: ChatInput,
    reservation: Reservation,
    model: CatalogModel,
    upstream: AsyncIterable<CanonicalEvent>,
    startedAt: number,
    onSettled: (result: SettlementOutcome | undefined) => void,
  ): AsyncIterableIterator<CanonicalEvent> {
    const accumulator = new ResponseAccumulator();
    const limit = requestOutputLimit(input.request, model);
    // The prompt's count from the stream's start, else the estimate counted once, at the first checkpoint.
    const inputEstimate = { tokens: this.settlement.promptCounts.get(input.request) };
    const checkpoint = (gate: OutputGate, count: boolean) =>
      this.checkpoint(input.request, model, accumulator, gate, inputEstimate, count);
    const gate: OutputGate = new OutputGate(
      () => reservation.maxOutputTokens,
      limit,
      outputSliceOf(model),
      async (tokens, whole) => {
        const before = reservation.maxOutputTokens;
        // A slice sized by bytes carries the last count rather than counting (docs/decisions/0021).
        const outcome = await this.billing
          .grantSlice(reservation, model, tokens, checkpoint(gate, !whole), whole)
          .catch(() => ({ granted: false as const }));
        // A byte-sized slice the account cannot pay whole is asked again by the exact count: only that one's
        // refusal is a refusal (a length stop).
        if (outcome.granted || !whole) this.metrics.outputSlice(model.id, outcome.granted);
        return reservation.maxOutputTokens - before;
      },
    );
    // The periodic batch writes what was delivered, counted: a crash of this instance bills it, not nothing. Once
    // an interval, the reply's kept text is also copied flat, so a long stream does not keep every chunk it was sent.
    this.billing.track(input.requestId, () => {
      accumulator.compact();
      return checkpoint(gate, true);
    });
    return new RelayedEvents(
      upstream[Symbol.asyncIterator](),
      accumulator,
      gate,
      input.request.stream ? () => this.settlement.firstOutput(input, model, startedAt) : undefined,
      {
        estimateUsage: () => this.settlement.estimateUsage(input.request, model, accumulator),
        failed: () => {
          const outcome: Outcome = input.signal.aborted ? 'client_disconnected' : 'upstream_error';
          if (outcome === 'upstream_error') this.metrics.upstreamError(model.vendor, 'mid_stream');
          return outcome;
        },
        finish: (outcome) => {
          if (gate.unbilledTokens > 0) this.metrics.unbilledTokens(model.id, gate.unbilledTokens);
          return this.settlement.finishReply(
            input,
            reservation,
            model,
            accumulator,
            outcome,
            startedAt,
            onSettled,
            gate.unbilledTokens,
          );
        },
      },
    );
  }

  /**
   * What the request has delivered, as the checkpoint a sweeper bills if this instance dies (undefined before any
   * output: a crash then costs nothing). Called by the periodic batch and with each slice, never per chunk; the
   * tokenizer is loaded by then. The input is the vendor's count when it told it, else the tokenizer's estimate.
   * Without `count`, the output is the gate's last count (none yet: no checkpoint), so no tokenizer runs.
   */
  private checkpoint(
    request: CanonicalRequest,
    model: CatalogModel,
    accumulator: ResponseAccumulator,
    gate: OutputGate,
    inputEstimate: { tokens: number | undefined },
    count: boolean,
  ): HoldCheckpoint | undefined {
    if (!gate.started || !tokenizerLoaded()) return undefined;
    const outputTokens = count ? gate.deliveredTokens() : gate.lastCount();
    if (outputTokens === undefined) return undefined;
    const told = accumulator.response.inputUsage;
    // Estimated once per request: the prompt does not change between checkpoints.
    if (told === undefined) inputEstimate.tokens ??= estimateRequestInputTokens(request);
    return {
      model: model.id,
      family: model.family,
      stream: request.stream,
      inputTokens: told === undefined ? inputEstimate.tokens! : told.inputTokens,
      cacheReadTokens: told?.cacheReadTokens ?? 0,
      cacheWriteTokens: told?.cacheWriteTokens ?? 0,
      cacheWrite1hTokens: told?.cacheWrite1hTokens ?? 0,
      outputTokens,
      at: this.now(),
    };
  }
}
