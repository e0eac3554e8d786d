import { FoldedEvents, ResponseAccumulator } from '../canonical/accumulate.js';
import {
  estimateRequestInputTokens,
  estimateResponseOutputTokens,
  loadTokenizer,
  tokenizerLoaded,
} from '../canonical/count-tokens.js';
import { GatewayError, toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import { choiceCount, type CanonicalRequest, type MediaInput } from '../canonical/request.js';
import { emptyUsage, totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import { assertKeyMayUseModel } from '../keys/key-permissions.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import { vendorMediaInput } from '../providers/media-input.js';
import { assertOutputOptions } from '../providers/output-options.js';
import { requestForVendor } from '../providers/server-tool-support.js';
import { withHeldSearches } from './held-searches.js';
import type { ProviderResponse } from '../providers/types.js';
import { WholeReply } from '../providers/whole-reply.js';
import { classifyAttemptFailure } from '../providers/upstream-retry.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { BillingService, SettlementOutcome } from '../billing/billing-service.js';
import { outputSliceOf } from '../billing/priced-model.js';
import type { HoldCheckpoint, Reservation } from '../storage/billing-types.js';
import { withAffinityKey } from './conversation-affinity.js';
import { costliestOf, FallbackModels, isVendorOutage } from './fallback-models.js';
import type { ExchangeTrace } from './exchange-trace.js';
import { assertModelCapabilities } from './model-capabilities.js';
import { implausibleUsage } from './usage-sanity.js';
import { OutputGate, outputUpperBound } from './output-gate.js';
import { assertPromptFitsWindow, clampOutputLimit, clampThinkingBudget, withOverflowCounts } from './request-limits.js';
import { OUTPUT_EVENTS, RelayedEvents, type Outcome } from './relayed-events.js';

/** For local counts, which do no I/O and so have nothing to abort. */
const NEVER_ABORTS = new AbortController().signal;

export interface ChatPipelineDependencies {
  catalog: ModelCatalog;
  providers: ProviderRegistry;
  billing: BillingService;
  now?: () => number;
  /** Where settlement failures are reported; they never reach the client. */
  onSettlementError?: (error: unknown, requestId: string) => void;
  /** Told of a vendor usage that could not be billed as reported (settled on the local count instead). */
  onImplausibleUsage?: (requestId: string, reason: string, vendorUsage: unknown) => void;
  /** Told every settled request's tokens (the tokens-per-minute limit counts them). */
  onTokensUsed?: (auth: AuthenticatedKey, tokens: number) => void;
  /**
   * Public model id or alias → the public names served instead, in order, when the one before failed (after its
   * own retries and failover). Off unless the operator sets `models.<id>.fallbacks` (or `.fallback`).
   */
  fallbacks?: Readonly<Record<string, readonly string[] | undefined>>;
  /** Interval of keep-alive comments on a stream while the upstream is silent (default 15 s). */
  keepAliveMs?: number;
  metrics?: GatewayMetrics;
}

export interface ChatInput {
  auth: AuthenticatedKey;
  request: CanonicalRequest;
  requestId: string;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
  /** The client route (`/v1/responses`, …), named in the usage record. */
  route: string;
  /** The client's stream tells the prompt's count before any output (Anthropic's `message_start`). */
  countInputAtStart?: boolean;
  /** The request's trace, when tracing or OTLP metrics are on. */
  trace?: ExchangeTrace | undefined;
}

/** One model of a fallback chain tried for a request: `ok`, or why it failed (`status_503`, `connect`, …). */
export interface ModelAttempt {
  model: string;
  outcome: string;
  /** Time to the answer of the one that answered. */
  ms?: number;
}

export interface ChatExchange {
  /** The model that answers: the requested one (an alias's target), or a model of its fallback chain. */
  model: CatalogModel;
  /** Every model tried, in order, the answering one last. */
  attempts: readonly ModelAttempt[];
  /** How often a stream sends a keep-alive comment while no event arrives. */
  keepAliveMs: number;
  droppedParameters: readonly string[];
  /** The model's output limit, when the client asked for more and the request was clamped to it. */
  clampedMaxOutputTokens: number | undefined;
  /** The thinking budget served, when the client's did not fit under the output limit (0: thinking turned off). */
  clampedThinkingBudget: number | undefined;
  /** The gateway's count of the prompt, when `countInputAtStart` asked for it and the vendor counts locally. */
  inputTokensAtStart: number | undefined;
  upstreamRequestId: string | undefined;
  /**
   * The reply's events. Always carries one `usage` event before it ends normally (synthesised with the
   * tokenizer when the vendor sent none). Settlement has happened when iteration is over, whichever way.
   */
  events: AsyncIterable<CanonicalEvent>;
  /** Once `events` is over: what the request was charged (undefined before, or when settlement failed; journaled: not known yet). */
  settlement(): SettlementOutcome | undefined;
}

/**
 * The request pipeline (docs/architecture.md#one-request-end-to-end), after authentication: resolve the model, call its
 * vendor, and settle exactly once whatever happens (completion, upstream fault, client gone). The only place that sees
 * both sides.
 */
export class ChatPipeline {
  private readonly now: () => number;
  private readonly metrics: GatewayMetrics;
  private readonly keepAliveMs: number;
  private fallbacks: FallbackModels;
  /** The fallback chain's attempts of each request, recorded with its usage when there was more than one. */
  private readonly attemptsOf = new WeakMap<ChatInput, readonly ModelAttempt[]>();
  /** Prompts counted at a stream's start (`inputTokensAtStart`): reused by checkpoints and estimates, not recounted. */
  private readonly promptCounts = new WeakMap<CanonicalRequest, number>();

  constructor(private readonly deps: ChatPipelineDependencies) {
    this.now = deps.now ?? Date.now;
    this.metrics = deps.metrics ?? NO_METRICS;
    this.keepAliveMs = deps.keepAliveMs ?? 15_000;
    this.fallbacks = new FallbackModels(deps.catalog, deps.providers, deps.fallbacks);
  }

  /** A reloaded configuration's chains (checked by the caller against the catalog it applies with them). */
  replaceFallbacks(fallbacks: FallbackModels): void {
    this.fallbacks = fallbacks;
  }

  /** What media the model's upstream can be given, for protocols that refuse the rest while decoding. */
  mediaInput(model: CatalogModel): MediaInput {
    return vendorMediaInput(model.vendor);
  }

  /** Not `async` itself: without a trace the exchange's own promise is handed back, with no extra step. */
  start(input: ChatInput): Promise<ChatExchange> {
    const trace = input.trace;
    if (trace === undefined) return this.startExchange(input);
    return this.startExchange(input).catch((error: unknown) => {
      trace.exchangeFailed(error);
      throw error;
    });
  }

  private async startExchange(input: ChatInput): Promise<ChatExchange> {
    const startedAt = this.now();
    const trace = input.trace;
    const model = this.deps.catalog.resolve(input.request.model);
    // The key's model allowlist, here where every client protocol resolves its model: before anything is held or sent.
    assertKeyMayUseModel(input.auth, model);
    // Choices and log probabilities the vendor cannot give, and what the operator's entry says the model does not
    // accept: refused before anything is held or sent.
    assertOutputOptions(input.request, model);
    assertModelCapabilities(input.request, model);
    // Vendor-run tools the family has no equivalent of are refused here, before anything is held or sent; those it
    // leaves out are not held for.
    const forModel = requestForVendor(input.request, model.vendor, model.family).request;
    const clampedMaxOutputTokens = clampOutputLimit(input.request, model);
    const clampedThinkingBudget = clampThinkingBudget(input.request);
    const countedPrompt = await assertPromptFitsWindow(input.request, model);
    const provider = this.deps.providers.forModel(model);
    const chain = this.fallbacks.chainFor(input.request.model, model, input.request, input.auth);
    trace?.exchangeStarted(input.request, model, input.auth);
    // Admission loads the tokenizer only when a UTF-8 upper bound of the prompt does not settle it (billing-service),
    // and reuses the window check's count when there is one. With a fallback chain the hold covers the costliest
    // model of it: whichever answers, its reply is covered.
    const holdFor = costliestOf([model, ...chain]);
    const reservation = await (trace === undefined
      ? this.deps.billing.admit(input.requestId, input.auth, holdFor, forModel, countedPrompt)
      : trace.admission(() => this.deps.billing.admit(input.requestId, input.auth, holdFor, forModel, countedPrompt)));
    // The hold covers the prompt and a first slice of output; it grows a slice at a time as output arrives (the
    // OutputGate of `relay`). A non-stream request the account could not pay in whole is read from the vendor as a
    // stream, so that a refused slice stops the vendor as it stops a stream; it is still answered whole.
    const upstreamRequest =
      !input.request.stream && reservation.coversLimit !== true ? { ...input.request, stream: true } : input.request;
    // Server tools the answering family leaves out (a Responses client's hosted tools) are reported with the
    // vendor's dropped parameters.
    let droppedServerTools: string[] = [];
    // The conversation's affinity key (credential pinning, beta's derived cache key) is hashed only if read.
    const callFor = (target: CatalogModel) => {
      const held = withHeldSearches(upstreamRequest, reservation.webSearches, target.vendor === 'anthropic');
      const forVendor = requestForVendor(held.request, target.vendor, target.family);
      droppedServerTools = [...held.dropped, ...forVendor.droppedParameters];
      return withAffinityKey(
        { request: forVendor.request, model: target, signal: input.signal, requestId: input.requestId, trace },
        input.auth.key.id,
        target.id,
        input.request,
      );
    };
    let response: ProviderResponse | undefined;
    let answering = model;
    const attempts: ModelAttempt[] = [];
    this.attemptsOf.set(input, attempts);
    // The provider retries and fails over between credentials itself, before anything reaches the client; a
    // chain's next model is its own upstream call, taken only for a vendor failure before the first byte.
    for (const [index, candidate] of [model, ...chain].entries()) {
      try {
        if (index > 0 && input.request.maxOutputTokens !== undefined) {
          const limit = Math.min(input.request.maxOutputTokens, candidate.maxOutputTokens);
          input.request.maxOutputTokens = limit;
          upstreamRequest.maxOutputTokens = limit;
        }
        const started = this.now();
        response = await (index === 0 ? provider : this.deps.providers.forModel(candidate)).call(callFor(candidate));
        attempts.push({ model: candidate.id, outcome: 'ok', ms: this.now() - started });
        answering = candidate;
        break;
      } catch (error) {
        attempts.push({ model: candidate.id, outcome: attemptFailure(error) });
        const last = index === chain.length;
        if (last || input.signal.aborted || !isVendorOutage(error)) {
          // Failed before any output: recorded for the usage log, never charged; the hold is released.
          await this.settle(input, reservation, model, emptyUsage(), 'upstream_error', startedAt, null);
          throw toGatewayError(index === 0 ? await withOverflowCounts(error, input.request, model) : error);
        }
        this.metrics.upstreamError(candidate.vendor, 'fallback');
      }
    }
    if (response === undefined) throw new Error('unreachable: the chain ended without an answer or an error');
    trace?.answeredBy(answering, response.upstreamRequestId);
    // Counted as `count_tokens` does once the vendor answered (fallback known), only where the vendor counts locally:
    // the others' count is an API call, and Anthropic and Gemini tell it in their first event.
    const inputTokensAtStart =
      input.countInputAtStart === true && input.request.stream
        ? await this.localInputTokens(input.request, answering).catch(() => undefined)
        : undefined;
    if (inputTokensAtStart !== undefined) this.promptCounts.set(input.request, inputTokensAtStart);
    let settlement: SettlementOutcome | undefined;
    const onSettled = (result: SettlementOutcome | undefined) => {
      settlement = result;
    };
    // A whole (non-stream) reply is already read: fold and settle it here in one pass rather than relaying it
    // event by event through async generators, which was a large share of what such a request allocated.
    // Output beyond what the hold covers goes through `relay`, which grows the hold (or cuts the reply).
    const whole = response.events instanceof WholeReply ? response.events.ready : undefined;
    const coveredWhole =
      reservation.maxOutputTokens >= requestOutputLimit(input.request, answering) ||
      (whole !== undefined && outputUpperBound(whole) <= reservation.maxOutputTokens);
    const events =
      whole !== undefined && !whole.some((event) => event.type === 'error') && coveredWhole
        ? await this.settleWhole(input, reservation, answering, whole, startedAt, onSettled)
        : this.relay(input, reservation, answering, response.events, startedAt, onSettled);
    return {
      model: answering,
      attempts,
      keepAliveMs: this.keepAliveMs,
      droppedParameters:
        droppedServerTools.length === 0
          ? response.droppedParameters
          : [...response.droppedParameters, ...droppedServerTools],
      clampedMaxOutputTokens,
      clampedThinkingBudget,
      inputTokensAtStart,
      upstreamRequestId: response.upstreamRequestId,
      events,
      settlement: () => settlement,
    };
  }

  /**
   * The prompt's input tokens counted without calling the vendor, for vendors whose count the gateway reproduces
   * (their published recipe); undefined for the others (their replies say it themselves). A local count does no
   * I/O, so it gets a signal that never aborts rather than a timer of its own.
   */
  private async localInputTokens(request: CanonicalRequest, model: CatalogModel): Promise<number | undefined> {
    const provider = this.deps.providers.forModel(model);
    if (provider.countsLocally !== true || provider.countTokens === undefined) return undefined;
    return provider.countTokens(request, model, NEVER_ABORTS);
  }

  /**
   * Input tokens of a prompt for `count_tokens`: the count the request is billed with, i.e. the vendor's own
   * counter (its endpoint, or its recipe over the body the gateway would send), the tokenizer for a vendor with
   * neither. Counting is free and records nothing.
   */
  async countInputTokens(request: CanonicalRequest, signal: AbortSignal, auth: AuthenticatedKey): Promise<number> {
    const model = this.deps.catalog.resolve(request.model);
    // The key's allowlist here too: counting may call the model's vendor (its count endpoint).
    assertKeyMayUseModel(auth, model);
    const provider = this.deps.providers.forModel(model);
    if (provider.countTokens === undefined) {
      await loadTokenizer();
      return estimateRequestInputTokens(request);
    }
    try {
      return await provider.countTokens(request, model, signal);
    } catch (error) {
      throw toGatewayError(error);
    }
  }

  /**
   * `relay` for a reply whose events are all known: the same fold, the same synthesised usage and the same
   * settlement (outcome `ok`, as a relay iterated to its end), done before the exchange is handed out.
   */
  private async settleWhole(
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

  /**
   * The reply's events as they come, folded on the way; settled once the upstream is over, failed, or the
   * consumer left. A hand-written iterator rather than an async generator: a generator's yield costs several
   * promises and queue entries per event, a large share of what a streamed request allocated.
   */
  private relay(
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
    const inputEstimate = { tokens: this.promptCounts.get(input.request) };
    const checkpoint = (gate: OutputGate, count: boolean) =>
      this.checkpoint(input.request, model, accumulator, gate, inputEstimate, count);
    const gate: OutputGate = new OutputGate(
      () => reservation.maxOutputTokens,
      limit,
      outputSliceOf(model),
      async (tokens, whole) => {
        const before = reservation.maxOutputTokens;
        // A slice sized by bytes carries the last count rather than counting (docs/decisions/0021).
        const outcome = await this.deps.billing
          .grantSlice(reservation, model, tokens, checkpoint(gate, !whole), whole)
          .catch(() => ({ granted: false as const }));
        // A byte-sized slice the account cannot pay whole is asked again by the exact count: only that one's
        // refusal is a refusal (a length stop).
        if (outcome.granted || !whole) this.metrics.outputSlice(model.id, outcome.granted);
        return reservation.maxOutputTokens - before;
      },
    );
    // The periodic batch writes what was delivered, counted: a crash of this instance bills it, not nothing.
    this.deps.billing.track(input.requestId, () => checkpoint(gate, true));
    return new RelayedEvents(
      upstream[Symbol.asyncIterator](),
      accumulator,
      gate,
      input.request.stream ? () => this.firstOutput(input, model, startedAt) : undefined,
      {
        estimateUsage: () => this.estimateUsage(input.request, model, accumulator),
        failed: () => {
          const outcome: Outcome = input.signal.aborted ? 'client_disconnected' : 'upstream_error';
          if (outcome === 'upstream_error') this.metrics.upstreamError(model.vendor, 'mid_stream');
          return outcome;
        },
        finish: (outcome) => {
          if (gate.unbilledTokens > 0) this.metrics.unbilledTokens(model.id, gate.unbilledTokens);
          return this.finishReply(
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

  private firstOutput(input: ChatInput, model: CatalogModel, startedAt: number): void {
    const seconds = (this.now() - startedAt) / 1000;
    this.metrics.timeToFirstToken(model.id, seconds);
    input.trace?.firstOutput(seconds);
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

  /** The end of every reply, whichever way it ended: billed usage, settlement (once), the tokens-per-minute count. */
  private async finishReply(
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
  private async estimateUsage(
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

  private async settle(
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

/** An attempt's failure as metrics name it: `status_503`, `connect`, `timeout`, or the error's code. */
function attemptFailure(error: unknown): string {
  if (!(error instanceof GatewayError)) return 'error';
  return classifyAttemptFailure(error, error.cause !== undefined).reason;
}

/** The most output a request may have in all: its limit (the client's or the model's) for each choice it asked for. */
function requestOutputLimit(request: CanonicalRequest, model: CatalogModel): number {
  return (request.maxOutputTokens ?? model.maxOutputTokens) * choiceCount(request);
}
