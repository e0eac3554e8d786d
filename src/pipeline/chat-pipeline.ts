import { ResponseAccumulator } from '../canonical/accumulate.js';
import { estimateRequestInputTokens, estimateResponseOutputTokens } from '../canonical/count-tokens.js';
import { GatewayError, toGatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage, type CanonicalUsage } from '../canonical/usage.js';
import type { CatalogModel, ModelCatalog } from '../catalog/model-catalog.js';
import type { AuthenticatedKey } from '../keys/key-service.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { UsageRepository } from '../storage/types.js';

export interface ChatPipelineDependencies {
  catalog: ModelCatalog;
  providers: ProviderRegistry;
  usage: UsageRepository;
  now?: () => number;
  /** Where settlement failures are reported; they never reach the client. */
  onSettlementError?: (error: unknown, requestId: string) => void;
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
    let response;
    try {
      response = await provider.call({ request: input.request, model, signal: input.signal, requestId: input.requestId });
    } catch (error) {
      // Failed before any output: recorded for the usage log, never charged.
      await this.settle(input, model, emptyUsage(), 'upstream_error', startedAt, null);
      throw toGatewayError(error);
    }
    return {
      model,
      droppedParameters: response.droppedParameters,
      upstreamRequestId: response.upstreamRequestId,
      events: this.relay(input, model, response.events, startedAt),
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
      const usage = response.usageReported ? response.usage : this.estimateUsage(input.request, accumulator);
      await this.settle(input, model, usage, outcome, startedAt, response.usageReported ? response.usage.raw : null);
    }
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
  ): Promise<void> {
    try {
      await this.deps.usage.record({
        requestId: input.requestId,
        accountId: input.auth.account.id,
        apiKeyId: input.auth.key.id,
        model: model.id,
        family: model.family,
        inputTokens: usage.inputTokens,
        cacheReadTokens: usage.cacheReadTokens,
        cacheWriteTokens: usage.cacheWriteTokens,
        outputTokens: usage.outputTokens,
        reasoningTokens: usage.reasoningTokens,
        status: outcome,
        stream: input.request.stream,
        latencyMs: this.now() - startedAt,
        createdAt: startedAt,
        rawUsage: rawUsage === null || rawUsage === undefined ? null : JSON.stringify(rawUsage),
      });
    } catch (error) {
      this.deps.onSettlementError?.(error, input.requestId);
    }
  }
}
