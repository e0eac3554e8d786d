import { ResponseAccumulator } from '../canonical/accumulate.js';
import { estimateRequestInputTokens, estimateResponseOutputTokens } from '../canonical/count-tokens.js';
import { GatewayError, toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage, totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { BillingService } from '../billing/billing-service.js';
import type { SettleResult } from '../storage/billing-types.js';

export interface ChatPipelineDependencies {
  catalog: ModelCatalog;
  providers: ProviderRegistry;
  billing: BillingService;
  now?: () => number;
  /** Where settlement failures are reported; they never reach the client. */
  onSettlementError?: (error: unknown, requestId: string) => void;
  /** Told every settled request's tokens (the tokens-per-minute limit counts them). */
  onTokensUsed?: (auth: AuthenticatedKey, tokens: number) => void;
}

export interface ChatInput {
  auth: AuthenticatedKey;
  request: CanonicalRequest;
  requestId: string;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

export interface ChatExchange {
  model: CatalogModel;
  droppedParameters: readonly string[];
  upstreamRequestId: string | undefined;
  /**
   * The reply's events. Always carries one `usage` event before it ends normally (synthesised with the
   * tokenizer when the vendor sent none). Settlement has happened when iteration is over, whichever way.
   */
  events: AsyncGenerator<CanonicalEvent, void, undefined>;
  /** Once `events` is over: what the request was charged (undefined before, or when settlement failed). */
  settlement(): SettleResult | undefined;
}

type Outcome = 'ok' | 'client_disconnected' | 'upstream_error';

/**
 * The request pipeline of design §1, after authentication: resolve the model, call its vendor, and settle
 * exactly once whatever happens (completion, upstream fault, client gone). The only place that sees both sides.
 */
export class ChatPipeline {
  private readonly now: () => number;

  constructor(private readonly deps: ChatPipelineDependencies) {
    this.now = deps.now ?? Date.now;
  }

  async start(input: ChatInput): Promise<ChatExchange> {
    const startedAt = this.now();
    const model = this.deps.catalog.resolve(input.request.model);
    if (input.request.maxOutputTokens !== undefined && input.request.maxOutputTokens > model.maxOutputTokens) {
      throw new GatewayError(
        'invalid_request',
        `max output tokens ${input.request.maxOutputTokens} is above the limit of ${model.id} (${model.maxOutputTokens}).`,
        { param: 'max_tokens' },
      );
    }
    const provider = this.deps.providers.get(model.vendor);
    const reservation = await this.deps.billing.admit(input.requestId, input.auth, model, input.request);
    // No client limit: the vendor may write only what the account can pay for (the hold's output tokens).
    if (input.request.maxOutputTokens === undefined && reservation.maxOutputTokens < model.maxOutputTokens) {
      input.request.maxOutputTokens = reservation.maxOutputTokens;
    }
    let response;
    try {
      response = await provider.call({ request: input.request, model, signal: input.signal, requestId: input.requestId });
    } catch (error) {
      // Failed before any output: recorded for the usage log, never charged; the hold is released.
      await this.settle(input, model, emptyUsage(), 'upstream_error', startedAt, null);
      throw toGatewayError(error);
    }
    let settlement: SettleResult | undefined;
    const events = this.relay(input, model, response.events, startedAt, (result) => {
      settlement = result;
    });
    return {
      model,
      droppedParameters: response.droppedParameters,
      upstreamRequestId: response.upstreamRequestId,
      events,
      settlement: () => settlement,
    };
  }

  /**
   * Input tokens of a prompt for `count_tokens`: the vendor's own counter where it has one, the tokenizer
   * otherwise. Counting is free and records nothing.
   */
  async countInputTokens(request: CanonicalRequest, signal: AbortSignal): Promise<number> {
    const model = this.deps.catalog.resolve(request.model);
    const provider = this.deps.providers.get(model.vendor);
    if (provider.countTokens === undefined) return estimateRequestInputTokens(request);
    try {
      return await provider.countTokens(request, model, signal);
    } catch (error) {
      throw toGatewayError(error);
    }
  }

  private async *relay(
    input: ChatInput,
    model: CatalogModel,
    upstream: AsyncIterable<CanonicalEvent>,
    startedAt: number,
    onSettled: (result: SettleResult | undefined) => void,
  ): AsyncGenerator<CanonicalEvent, void, undefined> {
    const accumulator = new ResponseAccumulator();
    let outcome: Outcome = 'client_disconnected';
    try {
      for await (const event of upstream) {
        accumulator.apply(event);
        yield event;
      }
      if (!accumulator.response.usageReported) {
        const usage = this.estimateUsage(input.request, accumulator);
        accumulator.apply({ type: 'usage', usage });
        yield { type: 'usage', usage };
      }
      outcome = 'ok';
    } catch (error) {
      outcome = input.signal.aborted ? 'client_disconnected' : 'upstream_error';
      throw toGatewayError(error);
    } finally {
      const response = accumulator.response;
      const usage = this.billableUsage(input.request, accumulator, outcome);
      onSettled(await this.settle(input, model, usage, outcome, startedAt, response.usageReported ? response.usage.raw : null));
      this.deps.onTokensUsed?.(input.auth, totalInputTokens(usage) + usage.outputTokens);
    }
  }

  /**
   * What a reply is billed for (design §4): the vendor's usage when it sent one; otherwise what was delivered,
   * counted with the tokenizer, plus the input when the vendor did the work. A vendor failure before any
   * output costs nothing.
   */
  private billableUsage(request: CanonicalRequest, accumulator: ResponseAccumulator, outcome: Outcome): CanonicalUsage {
    const response = accumulator.response;
    if (response.usageReported) return response.usage;
    if (outcome === 'upstream_error' && response.content.length === 0) return emptyUsage();
    return this.estimateUsage(request, accumulator);
  }

  /** What was delivered, counted with the tokenizer: the rule for replies the vendor never reported. */
  private estimateUsage(request: CanonicalRequest, accumulator: ResponseAccumulator): CanonicalUsage {
    return {
      ...emptyUsage(),
      inputTokens: estimateRequestInputTokens(request),
      outputTokens: estimateResponseOutputTokens(accumulator.response),
    };
  }

  private async settle(
    input: ChatInput,
    model: CatalogModel,
    usage: CanonicalUsage,
    outcome: Outcome,
    startedAt: number,
    rawUsage: unknown,
  ): Promise<SettleResult | undefined> {
    try {
      return await this.deps.billing.settle({
        requestId: input.requestId,
        auth: input.auth,
        model,
        usage,
        status: outcome,
        stream: input.request.stream,
        startedAt,
        rawUsage,
      });
    } catch (error) {
      // The hold stays and the sweeper releases it; the operator sees the failure in the log.
      this.deps.onSettlementError?.(error, input.requestId);
      return undefined;
    }
  }
}
