/**
 * One `POST …/chat/completions` from body to wire, for the two vendors that speak the Chat Completions
 * dialect (OpenAI and DeepSeek). What differs between them — validation rules, reasoning, usage shape,
 * error wording, stream details — comes in a `ChatVendor`; the order of the steps is shared.
 */
import { FAULT_HEADER, parseRequestDirectives, type SimulatorDirectives } from '../fault-directives.js';
import type { PromptCacheSplit } from '../prompt-cache.js';
import { reportedPromptTokens } from '../prompt-cache/cache-counts.js';
import { hashHex } from '../reply-engine.js';
import { playJson, playStream, type VendorErrorRenderer } from '../response-player.js';
import { readJsonBody, sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import { planTurn, type TurnPlan } from '../turn-planner.js';
import { invalidRequest } from './openai-errors.js';
import { instructedSchema } from './instructed-schema.js';
import {
  countPromptTokens,
  lastUserText,
  replySeedText,
  stopSequences,
  toolOffers,
  toolRequirement,
  trailingToolResults,
} from './openai-prompt.js';
import { completionBody, frameCount, streamScript, type ChatDialect, type ChatReplySet } from './openai-response.js';
import type { OpenAiChatRequest } from './openai-types.js';
import type { ValidationResult } from './openai-validate.js';
import { urlCitations } from './openai-web-search.js';

export interface ReasoningMode {
  enabled: boolean;
  /** Length factor of the reasoning text (OpenAI `reasoning_effort`). */
  scale: number;
}

export interface ChatVendor {
  validate(body: unknown): ValidationResult;
  /** The vendor's answer to a body that is not JSON. */
  invalidJsonMessage: string;
  reasoning(request: OpenAiChatRequest): ReasoningMode;
  usage(plans: readonly TurnPlan[], prompt: PromptCacheSplit): object;
  /** The prompt's cache reads and writes: by directive, or from the simulator's prompt cache. */
  promptCache(
    exchange: SimulatorExchange,
    request: OpenAiChatRequest,
    total: number,
    directives: SimulatorDirectives,
  ): PromptCacheSplit;
  dialect(request: OpenAiChatRequest): ChatDialect;
  /** Completion id from the raw body (deterministic). */
  completionId(raw: string): string;
  renderError: VendorErrorRenderer;
  /** The vendor's error body for a prompt of `promptTokens` over a window of `contextWindow` (`context-window=`). */
  contextOverflowBody(promptTokens: number, contextWindow: number, completionTokens: number): string;
  headers(exchange: SimulatorExchange): Record<string, string>;
}

/** An error reply with the vendor's usual headers. */
export function sendVendorError(exchange: SimulatorExchange, vendor: ChatVendor, status: number, body: string): void {
  sendJson(exchange, status, body, vendor.headers(exchange));
}

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * The OpenAI-dialect key check (OpenAI and DeepSeek): true when the bearer key is accepted, otherwise a 401
 * with the body the vendor sends for that case (`unauthorized` gets the key, or undefined when none was sent).
 */
export function authenticateBearer(
  exchange: SimulatorExchange,
  vendor: ChatVendor,
  unauthorized: (key: string | undefined) => string,
): boolean {
  const header = exchange.request.headers.authorization;
  const key = header === undefined ? undefined : BEARER.exec(header.trim())?.[1];
  if (exchange.isKeyAccepted(key)) return true;
  sendVendorError(exchange, vendor, 401, unauthorized(key));
  return false;
}

function directivesOf(
  exchange: SimulatorExchange,
  vendor: ChatVendor,
  userText: string,
): SimulatorDirectives | undefined {
  const { directives, problems } = parseRequestDirectives(userText, exchange.request.headers[FAULT_HEADER]);
  if (problems.length === 0) return directives;
  sendVendorError(
    exchange,
    vendor,
    400,
    invalidRequest(`Simulator directive: ${problems.join('; ')}.`, null, 'simulator_directive'),
  );
  return undefined;
}

/**
 * `response_format` as the turn planner takes it: JSON text, of the schema when one is given. In JSON mode a
 * schema the system prompt names is followed, as a model told it would (how DeepSeek gets structured output).
 */
function jsonOutputOf(request: OpenAiChatRequest): { jsonOutput?: { schema?: unknown } } {
  const format = request.response_format;
  if (format?.type === 'json_schema')
    return { jsonOutput: format.json_schema?.schema === undefined ? {} : { schema: format.json_schema.schema } };
  if (format?.type === 'json_object') {
    const schema = instructedSchema(request.messages);
    return { jsonOutput: schema === undefined ? {} : { schema } };
  }
  return {};
}

export async function serveChatCompletion(exchange: SimulatorExchange, vendor: ChatVendor): Promise<void> {
  const read = await readJsonBody(exchange);
  if (read.kind === 'too-large') return sendVendorError(exchange, vendor, 413, invalidRequest(read.message));
  if (read.kind === 'invalid-json')
    return sendVendorError(exchange, vendor, 400, invalidRequest(vendor.invalidJsonMessage));
  const validation = vendor.validate(read.body);
  if (!validation.ok) {
    const { message, param, code } = validation.error;
    return sendVendorError(exchange, vendor, 400, invalidRequest(message, param, code));
  }
  const request = validation.request;
  const userText = lastUserText(request.messages);
  const directives = directivesOf(exchange, vendor, userText);
  if (directives === undefined) return;
  const promptTokens = countPromptTokens(request);
  if (directives.contextWindow !== undefined && promptTokens > directives.contextWindow) {
    const completionTokens = request.max_completion_tokens ?? request.max_tokens ?? 0;
    const body = vendor.contextOverflowBody(promptTokens, directives.contextWindow, completionTokens);
    return sendVendorError(exchange, vendor, 400, body);
  }

  const reasoning = vendor.reasoning(request);
  const seedText = replySeedText(request);
  const toolResults = trailingToolResults(request.messages);
  const plans: TurnPlan[] = [];
  for (let variant = 0; variant < (request.n ?? 1); variant++) {
    const planned = planTurn({
      seedText,
      lastUserText: userText,
      directives,
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
      stopSequences: stopSequences(request.stop),
      variant,
      reasoning: reasoning.enabled,
      reasoningScale: reasoning.scale,
      tools: toolOffers(request),
      toolChoice: toolRequirement(request),
      parallelCalls: request.parallel_tool_calls !== false,
      ...(toolResults === undefined ? {} : { toolResults }),
      ...jsonOutputOf(request),
    });
    if (!planned.ok)
      return sendVendorError(
        exchange,
        vendor,
        400,
        invalidRequest(`Simulator directive: ${planned.problem}.`, null, 'simulator_directive'),
      );
    plans.push(planned.plan);
  }

  const prompt = vendor.promptCache(exchange, request, reportedPromptTokens(promptTokens, directives), directives);
  const set: ChatReplySet = {
    id: vendor.completionId(read.raw),
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: plans,
    usage: vendor.usage(plans, prompt),
    ...(request.web_search_options === undefined || request.web_search_options === null
      ? {}
      : { annotations: urlCitations(userText, plans[0]?.text.text ?? '') }),
    ...(request.logprobs === true ? { topLogprobs: request.top_logprobs ?? 0 } : {}),
  };
  const dialect = vendor.dialect(request);
  const plan = { directives, renderError: vendor.renderError, headers: vendor.headers(exchange) };
  if (request.stream === true) {
    await playStream(exchange, streamScript(set, dialect, request.stream_options?.include_usage === true), plan);
  } else {
    await playJson(exchange, completionBody(set, dialect), frameCount(set, dialect), plan);
  }
}

/** Deterministic tool-call ids: `call_` and 24 characters of the call's seed hash. */
export function chatToolCallId(seed: string): string {
  return `call_${hashHex(seed, 24)}`;
}
