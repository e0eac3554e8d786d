import { estimateRequestInputTokens, loadTokenizer } from '../canonical/count-tokens.js';
import { GatewayError, toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest, MediaInput } from '../canonical/request.js';
import { emptyUsage } from '../canonical/usage.js';
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
import { AffinityKeyedCall } from './conversation-affinity.js';
import { costliestOf, FallbackModels, isVendorOutage } from './fallback-models.js';
import type { ExchangeTrace } from './exchange-trace.js';
import { MeteredRelay } from './metered-relay.js';
import { assertModelCapabilities } from './model-capabilities.js';
import { outputUpperBound } from './output-gate.js';
import { ReplySettlement } from './reply-settlement.js';
import {
  assertPromptFitsWindow,
  clampOutputLimit,
  clampThinkingBudget,
  requestOutputLimit,
  withOverflowCounts,
} from './request-limits.js';

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
  private readonly settlement: ReplySettlement;
  private readonly meteredRelay: MeteredRelay;

  constructor(private readonly deps: ChatPipelineDependencies) {
    this.now = deps.now ?? Date.now;
    this.metrics = deps.metrics ?? NO_METRICS;
    this.keepAliveMs = deps.keepAliveMs ?? 15_000;
    this.fallbacks = new FallbackModels(deps.catalog, deps.providers, deps.fallbacks);
    this.settlement = new ReplySettlement(deps, this.now, this.metrics);
    this.meteredRelay = new MeteredRelay(deps.billing, this.metrics, this.now, this.settlement);
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
    // OutputGate of the metered relay). A non-stream request the account could not pay in whole is read from the
    // vendor as a stream, so that a refused slice stops the vendor as it stops a stream; it is still answered whole.
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
      return new AffinityKeyedCall(
        forVendor.request,
        target,
        input.signal,
        input.requestId,
        trace,
        input.auth.key.id,
        input.request,
      );
    };
    let response: ProviderResponse | undefined;
    let answering = model;
    const attempts: ModelAttempt[] = [];
    this.settlement.attemptsOf.set(input, attempts);
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
          await this.settlement.settle(input, reservation, model, emptyUsage(), 'upstream_error', startedAt, null);
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
        ? await this.settlement.localInputTokens(input.request, answering).catch(() => undefined)
        : undefined;
    if (inputTokensAtStart !== undefined) this.settlement.promptCounts.set(input.request, inputTokensAtStart);
    let settlement: SettlementOutcome | undefined;
    const onSettled = (result: SettlementOutcome | undefined) => {
      settlement = result;
    };
    // A whole (non-stream) reply is already read: fold and settle it at once, in one pass, rather than relaying it
    // event by event through async generators, which was a large share of what such a request allocated.
    // Output beyond what the hold covers goes through the metered relay, which grows the hold (or cuts the reply).
    const whole = response.events instanceof WholeReply ? response.events.ready : undefined;
    const coveredWhole =
      reservation.maxOutputTokens >= requestOutputLimit(input.request, answering) ||
      (whole !== undefined && outputUpperBound(whole) <= reservation.maxOutputTokens);
    const events =
      whole !== undefined && !whole.some((event) => event.type === 'error') && coveredWhole
        ? await this.settlement.settleWhole(input, reservation, answering, whole, startedAt, onSettled)
        : this.meteredRelay.relay(input, reservation, answering, response.events, startedAt, onSettled);
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
}

/** An attempt's failure as metrics name it: `status_503`, `connect`, `timeout`, or the error's code. */
function attemptFailure(error: unknown): string {
  if (!(error instanceof GatewayError)) return 'error';
  return classifyAttemptFailure(error, error.cause !== undefined).reason;
}
