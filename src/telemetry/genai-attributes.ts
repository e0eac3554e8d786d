import type { Attributes } from '@opentelemetry/api';
import type { CanonicalResponse } from '../canonical/accumulate.js';
import type { FinishReason } from '../canonical/events.js';
import type { CanonicalRequest, VendorName } from '../canonical/request.js';
import { totalInputTokens, type CanonicalUsage } from '../canonical/usage.js';

/**
 * The GenAI semantic conventions' names, copied here as their guidance asks of incubating attributes (the
 * `incubating` entry point may rename them in a minor release, and it is a large module to load for a few strings).
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  /** The older name of the provider, still read by many backends. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  requestStream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  responseTimeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  usageCacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  usageCacheCreationInputTokens: 'gen_ai.usage.cache_creation.input_tokens',
  usageReasoningOutputTokens: 'gen_ai.usage.reasoning.output_tokens',
  tokenType: 'gen_ai.token.type',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
} as const;

export const ERROR_TYPE = 'error.type';

/** The client protocol a route speaks, and the GenAI operation it is (Google's generateContent is `generate_content`). */
export interface RouteOperation {
  protocol: 'openai-chat' | 'anthropic-messages' | 'openai-responses' | 'gemini-generate';
  operation: 'chat' | 'generate_content';
}

/** Route pattern → protocol and operation; undefined for routes that call no model. */
export function routeOperation(route: string): RouteOperation | undefined {
  if (route === '/v1/chat/completions') return { protocol: 'openai-chat', operation: 'chat' };
  if (route === '/v1/messages') return { protocol: 'anthropic-messages', operation: 'chat' };
  if (route === '/v1/responses') return { protocol: 'openai-responses', operation: 'chat' };
  if (/:(stream)?generateContent$/i.test(route)) return { protocol: 'gemini-generate', operation: 'generate_content' };
  return undefined;
}

/** `gen_ai.provider.name` of a vendor family: the conventions' well-known values. */
export function providerName(vendor: VendorName): string {
  switch (vendor) {
    case 'gemini':
      return 'gcp.gemini';
    default:
      return vendor;
  }
}

/** What the client asked for: the model, and the sampling parameters it set (absent ones are left out). */
export function requestAttributes(request: CanonicalRequest): Attributes {
  const attributes: Attributes = {
    [GEN_AI.requestModel]: request.model,
    [GEN_AI.requestStream]: request.stream,
  };
  if (request.maxOutputTokens !== undefined) attributes[GEN_AI.requestMaxTokens] = request.maxOutputTokens;
  if (request.sampling.temperature !== undefined) attributes[GEN_AI.requestTemperature] = request.sampling.temperature;
  if (request.sampling.topP !== undefined) attributes[GEN_AI.requestTopP] = request.sampling.topP;
  return attributes;
}

/**
 * Usage as the conventions count it: `input_tokens` holds every prompt token, cached ones included, with the cache
 * reads and writes also given apart (Tollgate's canonical `inputTokens` is the uncached part only).
 */
export function usageAttributes(usage: CanonicalUsage): Attributes {
  const attributes: Attributes = {
    [GEN_AI.usageInputTokens]: totalInputTokens(usage),
    [GEN_AI.usageOutputTokens]: usage.outputTokens,
    [GEN_AI.usageCacheReadInputTokens]: usage.cacheReadTokens,
    [GEN_AI.usageCacheCreationInputTokens]: usage.cacheWriteTokens,
  };
  if (usage.reasoningTokens > 0) attributes[GEN_AI.usageReasoningOutputTokens] = usage.reasoningTokens;
  return attributes;
}

/** The reply's id, model and finish reasons (one per choice), where the vendor gave them. */
export function responseAttributes(response: CanonicalResponse): Attributes {
  const attributes: Attributes = {};
  if (response.id !== '') attributes[GEN_AI.responseId] = response.id;
  if (response.model !== '') attributes[GEN_AI.responseModel] = response.model;
  const reasons = [response.finishReason, ...(response.moreChoices ?? []).map((choice) => choice.finishReason)]
    .filter((reason): reason is FinishReason => reason !== null)
    .map(finishReasonName);
  if (reasons.length > 0) attributes[GEN_AI.responseFinishReasons] = reasons;
  return attributes;
}

/** A unified finish reason by the names OpenAI's API made common (`stop`, `length`, `tool_calls`, `content_filter`). */
export function finishReasonName(reason: FinishReason): string {
  switch (reason) {
    case 'stop-sequence':
      return 'stop';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return reason;
  }
}

/** `error.type` of a failure: the gateway catalog's stable code where there is one, else the error's class. */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const name = (error as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return '_OTHER';
}
