import { FoldedEvents, ResponseAccumulator } from '../canonical/accumulate.js';
import { estimateRequestInputTokens, estimateResponseOutputTokens, loadTokenizer } from '../canonical/count-tokens.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage, totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel } from '../catalog/model-catalog.js';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';
import type { SettlementOutcome } from '../billing/billing-service.js';
import type { Reservation } from '../storage/billing-types.js';
import type { ChatInput, ChatPipelineDependencies, ModelAttempt } from './chat-pipeline.js';
import { implausibleUsage } from './usage-sanity.js';
import { OUTPUT_EVENTS, type Outcome } from './relayed-events.js';

/** For local counts, which do no I/O and so have nothing to abort. */
const NEVER_ABORTS = new AbortController().signal;

/** What settling a reply needs of the pipeline's dependencies. */
export type ReplySettlementDependencies = Pick<
  ChatPipelineDependencies,
  'providers' | 'billing' | 'onSettlementError' | 'onImplausibleUsage' | 'onTokensUsed'
>;

/**
 * The end of a reply, whichever way it ended: what it is billed for (the vendor's usage, or the local count that
 * stands in for a missing or implausible one), its settlement exactly once, and the metrics of both, time to first
 * token included. A whole reply is folded and settled here in one pass; a relayed one calls `finishReply` when it
 * is over (metered-relay).
 */
export class ReplySettlement {
  /** The fallback chain's attempts of each request, recorded with its usage when there was more than one. */
  readonly attemptsOf = new WeakMap<ChatInput, readonly ModelAttempt[]>();
  /** Prompts counted at a stream's start (`inputTokensAtStart`): reused by checkpoints and estimates, not recounted. */
  readonly promptCounts = new WeakMap<CanonicalRequest, number>();

  constructor(
    private readonly deps: ReplySettlementDependencies,
    private readonly now: () => number,
    private readonly metrics: GatewayMetrics,
  ) {}

  /**
   * The prompt's input tokens counted without calling the vendor, for vendors whose count the gateway reproduces
   * (their published recipe); undefined for the others (their replies say it themselves). A local count does no
   * I/O, so it gets a signal that never aborts rather than a timer of its own.
   */
  async localInputTokens(request: CanonicalRequest, model: CatalogModel): Promise<number | undefined> {
    const provider = this.deps.providers.forModel(model);
    if (provider.countsLocally !== true || provider.countTokens === undefined) return undefined;
    return provider.countTokens(request, model, NEVER_ABORTS);
  }

  /**
   * The relay (metered-relay) for a reply whose events are all known: the same fold, the same synthesised usage and
   * the same settlement (outcome `ok`, as a relay iterated to its end), done before the exchange is handed out.
   */
  async settleWhole(
    input: ChatInput,
    reservation: Reservation,
    model: CatalogModel,
    events: readonly CanonicalEvent[],
    startedAt: number,
    onSettled: (result: SettlementOutcome | undefined) => void,
  ): Promise<FoldedEvents> {
    const accumulator = new ResponseAccumulator();
    let firstOutput = input.request.stream;
    for (const event of events) {
      accumulator.apply(event);
      if (firstOutput && OUTPUT_EVENTS.has(event.type)) {
        firstOutput = false;
        this.firstOutput(input, model, startedAt);
      }
    }
    let all = events;
    if (!accumulator.response.usageReported) {
      const usage = await this.estimateUsage(input.request, model, accumulator);
      accumulator.apply({ type: 'usage', usage });
      all = [...events, { type: 'usage', usage }];
    }
    await this.finishReply(input, reservation, model, accumulator, 'ok', startedAt, onSettled);
    return new FoldedEvents(all, accumulator.response);
  }

  /** A stream's time to first token, told to the metrics and the trace. */
  firstOutput(input: ChatInput, model: CatalogModel, startedAt: number): void {
    const seconds = (this.now() - startedAt) / 1000;
    this.metrics.timeToFirstToken(model.id, seconds);
    input.trace?.firstOutput(seconds);
  }

  /** The end of every reply, whichever way it ended: billed usage, settlement (once), the tokens-per-minute count. */
  async finishReply(
    input: ChatInput,
    reservation: Reservation,
    model: CatalogModel,
    accumulator: ResponseAccumulator,
    outcome: Outcome,
    startedAt: number,
    onSettled: (result: SettlementOutcome | undefined) => void,
    unbilledTokens = 0,
  ): Promise<void> {
    const response = accumulator.response;
    const usage = await this.billableUsage(input, model, accumulator, outcome);
    onSettled(
      await this.settle(
        input,
        reservation,
        model,
        usage,
        outcome,
        startedAt,
        response.usageReported ? response.usage.raw : null,
        unbilledTokens,
        // The vendor's own figures (not the local count that stands in for an implausible or missing report).
        response.usageReported && usage === response.usage,
      ),
    );
    input.trace?.replyFinished(response, usage, outcome);
    this.deps.onTokensUsed?.(input.auth, totalInputTokens(usage) + usage.outputTokens);
  }

  /**
   * What a reply is billed for (docs/architecture.md#what-a-reply-is-billed-for): the vendor's usage when it sent one;
   * otherwise what was delivered, counted with the tokenizer, plus the input when the vendor did the work. A vendor
   * failure before any output costs nothing.
   */
  private async billableUsage(
    input: ChatInput,
    model: CatalogModel,
    accumulator: ResponseAccumulator,
    outcome: Outcome,
  ): Promise<CanonicalUsage> {
    const { request } = input;
    const response = accumulator.response;
    if (response.usageReported) {
      const implausible = implausibleUsage(response.usage, {
        maxOutputTokens: request.maxOutputTokens ?? model.maxOutputTokens,
        contextWindow: model.contextWindow,
      });
      if (implausible === undefined) return response.usage;
      // Settled on the local count; the vendor's figure stays on the usage record (raw) for audit.
      this.deps.onImplausibleUsage?.(input.requestId, implausible, response.usage.raw ?? null);
      return this.estimateUsage(request, model, accumulator);
    }
    if (outcome === 'upstream_error' && response.content.length === 0) return emptyUsage();
    return this.estimateUsage(request, model, accumulator);
  }

  /**
   * What was delivered, counted with the tokenizer: the rule for replies the vendor never reported (cut off, or
   * ended early by a stop sequence the gateway matched). The input is the vendor's own count when it told it at the
   * start, else its recipe where the gateway has it (the count `count_tokens` gives), else the tokenizer's estimate. Admission may not have loaded the
   * tokenizer (a rich account's prompt is bounded without it), so it is loaded here, asynchronously, rather than
   * by the synchronous fallback that would block the event loop while it loads.
   */
  async estimateUsage(
    request: CanonicalRequest,
    model: CatalogModel,
    accumulator: ResponseAccumulator,
  ): Promise<CanonicalUsage> {
    await loadTokenizer();
    const outputTokens = estimateResponseOutputTokens(accumulator.response);
    const told = accumulator.response.inputUsage;
    if (told !== undefined)
      return {
        ...emptyUsage(),
        inputTokens: told.inputTokens,
        cacheReadTokens: told.cacheReadTokens,
        cacheWriteTokens: told.cacheWriteTokens,
        cacheWrite1hTokens: told.cacheWrite1hTokens,
        outputTokens,
      };
    const local =
      this.promptCounts.get(request) ?? (await this.localInputTokens(request, model).catch(() => undefined));
    return { ...emptyUsage(), inputTokens: local ?? estimateRequestInputTokens(request), outputTokens };
  }

  async settle(
    input: ChatInput,
    reservation: Reservation,
    model: CatalogModel,
    usage: CanonicalUsage,
    outcome: Outcome,
    startedAt: number,
    rawUsage: unknown,
    unbilledTokens = 0,
    vendorReported = false,
  ): Promise<SettlementOutcome | undefined> {
    const settlement = {
      unbilledTokens,
      vendorReported,
      requestId: input.requestId,
      auth: input.auth,
      model,
      usage,
      status: outcome,
      stream: input.request.stream,
      startedAt,
      rawUsage: withModelAttempts(rawUsage, this.attemptsOf.get(input)),
      reservation,
      route: input.route,
    };
    const trace = input.trace;
    try {
      const result = await (trace === undefined
        ? this.deps.billing.settle(settlement)
        : trace.settlement(outcome, () => this.deps.billing.settle(settlement)));
      if (result.settled) {
        const tokens = {
          input: usage.inputTokens,
          output: usage.outputTokens,
          cacheRead: usage.cacheReadTokens,
          cacheWrite: usage.cacheWriteTokens,
        };
        this.metrics.usageSettled(model.id, tokens, result.chargedNano);
        this.metrics.usageUnbilled(model.id, result.unbilledTokens, result.unbilledNano);
      }
      return result;
    } catch (error) {
      // Refused by the store without a journal to take it (tests): the hold stays for the sweeper; the
      // operator sees the failure in the log.
      this.deps.onSettlementError?.(error, input.requestId);
      return undefined;
    }
  }
}

/**
 * The vendor's usage object with the fallback chain's attempts beside it, under a key no vendor uses
 * (`tollgate_model_attempts`), when more than one model was tried: the usage record lists the attempts without a
 * column of its own, and a record without a fallback reads as before.
 */
function withModelAttempts(rawUsage: unknown, attempts: readonly ModelAttempt[] | undefined): unknown {
  if (attempts === undefined || attempts.length < 2) return rawUsage;
  const listed = attempts.map(({ model, outcome }) => ({ model, outcome }));
  if (rawUsage === null || rawUsage === undefined) return { tollgate_model_attempts: listed };
  if (typeof rawUsage !== 'object' || Array.isArray(rawUsage))
    return { vendor: rawUsage, tollgate_model_attempts: listed };
  return { ...rawUsage, tollgate_model_attempts: listed };
}
