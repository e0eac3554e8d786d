import { anthropicSamplingRule, type AnthropicSamplingRule } from './anthropic-sampling.js';
import {
  ANTHROPIC_BETA_EXTENSION,
  ANTHROPIC_BETA_QUERY_EXTENSION,
  OUTPUT_CONFIG_EXTENSION_PREFIX,
} from '../../canonical/request.js';
import type { CanonicalRequest, ToolChoice } from '../../canonical/request.js';
import type { CatalogModel } from '../../catalog/model-catalog.js';
import type {
  AnthropicMessagesRequest,
  AnthropicOutputConfig,
  AnthropicThinkingConfig,
  AnthropicTool,
  AnthropicToolChoice,
} from '../../wire/anthropic-messages-wire.js';
import { buildAnthropicConversation, lastToolTurnLacksThinking } from './anthropic-build-messages.js';
import { buildAnthropicServerTool } from './anthropic-server-tools.js';
import { objectSchema, planJsonMode } from './anthropic-json-mode.js';
import {
  cacheControlOf,
  placeAutomaticBreakpoints,
  placesAutomaticBreakpoints,
  withCacheControl,
} from './anthropic-prompt-cache.js';
import { reasoningParameterName, thinkingIntent, tokenLimits } from './anthropic-thinking.js';
import { unsupportedPromptCacheFields } from '../prompt-cache-fields.js';

export interface BuiltAnthropicRequest {
  /** The Messages body: the typed fields plus, for an Anthropic client, its extension fields. */
  body: AnthropicMessagesRequest & Record<string, unknown>;
  droppedParameters: string[];
  /** The client's `anthropic-beta` header, forwarded only from an Anthropic client. */
  betaHeader: string | undefined;
  /** The client called `client.beta.messages` (`?beta=true`): the same query goes upstream. */
  betaQuery: boolean;
  /** Name of the JSON-mode tool whose calls the mappers turn back into reply text. */
  jsonToolName: string | undefined;
}

/** With thinking on, Anthropic accepts `top_p` only in [0.95, 1]. */
const THINKING_MIN_TOP_P = 0.95;

export interface BuildAnthropicOptions {
  /** Place the gateway's own breakpoints where the request qualifies (not for a token count: they change nothing). */
  automaticCaching?: boolean;
}

/** Canonical request → Anthropic Messages body (policies: see the header of `anthropic-provider.ts`). */
export function buildAnthropicRequest(
  request: CanonicalRequest,
  model: CatalogModel,
  options: BuildAnthropicOptions = {},
): BuiltAnthropicRequest {
  const dropped: string[] = [];
  const tools = buildTools(request);
  // An Anthropic client's structured output is `output_config.format`, sent as such; the forced-tool JSON mode is
  // for OpenAI clients' `response_format`.
  const nativeFormat = request.extensionsProtocol === 'anthropic-messages';
  const jsonMode = nativeFormat ? undefined : planJsonMode(request, tools);

  // Thinking first: whether it survives decides how reasoning is replayed and which parameters may go.
  const intent = thinkingIntent(request);
  let thinkingOn = intent.kind === 'enabled' || intent.kind === 'adaptive' || intent.kind === 'between-tools';
  if (intent.kind === 'unsupported') dropped.push(reasoningParameterName(request));
  let conversation = buildAnthropicConversation(request, { replayReasoning: thinkingOn });
  const thinkingBlocker = !thinkingOn
    ? undefined
    : jsonMode !== undefined
      ? 'json'
      : lastToolTurnLacksThinking(conversation.messages)
        ? 'history'
        : undefined;
  if (thinkingBlocker !== undefined) {
    // JSON mode needs a forced tool and a tool loop needs the signed thinking of its last turn
    // (docs/protocols/translation.md#signed-thinking-in-tool-loops): reasoning only tunes quality, so it gives way
    // rather than the request failing.
    thinkingOn = false;
    dropped.push(reasoningParameterName(request));
    conversation = buildAnthropicConversation(request, { replayReasoning: false });
  }
  const limits = tokenLimits(
    request.maxOutputTokens,
    model.maxOutputTokens,
    thinkingOn && intent.kind === 'enabled' ? intent.budgetTokens : undefined,
  );

  const body: BuiltAnthropicRequest['body'] = {
    model: model.upstreamModel,
    max_tokens: limits.maxTokens,
    messages: conversation.messages,
  };
  if (conversation.system.length > 0) body.system = conversation.system;
  const thinking =
    thinkingOn || intent.kind === 'disabled'
      ? thinkingConfig(intent.kind, limits.budgetTokens, request.reasoning?.display)
      : undefined;
  if (thinking !== undefined) body.thinking = thinking;
  const outputConfig = nativeFormat ? buildOutputConfig(request) : undefined;
  if (outputConfig !== undefined) body.output_config = outputConfig;

  applySampling(request, body, dropped, thinkingOn, anthropicSamplingRule(model.upstreamModel));

  const serverTools = (request.serverTools ?? []).map((tool) => buildAnthropicServerTool(tool, dropped));
  const allTools = [...tools, ...serverTools, ...(jsonMode === undefined ? [] : [jsonMode.tool])];
  if (allTools.length > 0) body.tools = allTools;
  const toolChoice =
    jsonMode?.toolChoice ?? buildToolChoice(request, tools.length + serverTools.length > 0, thinkingOn, dropped);
  if (toolChoice !== undefined) body.tool_choice = toolChoice;

  // Anthropic has one end-user id: the client's `user`, else its `safety_identifier` (dropped when both came).
  const userId = request.user || request.safetyIdentifier;
  if (userId !== undefined && userId !== '') body.metadata = { user_id: userId };
  if (request.user && request.safetyIdentifier !== undefined) dropped.push('safety_identifier');
  dropped.push(...unsupportedPromptCacheFields(request));
  body.stream = request.stream;
  if (request.cache !== undefined) body.cache_control = cacheControlOf(request.cache);
  else if (options.automaticCaching !== false && placesAutomaticBreakpoints(request, model))
    placeAutomaticBreakpoints(body);

  let betaHeader: string | undefined;
  let betaQuery = false;
  for (const [key, value] of Object.entries(request.extensions)) {
    if (request.extensionsProtocol !== 'anthropic-messages') dropped.push(key);
    else if (key === ANTHROPIC_BETA_EXTENSION) betaHeader = betaHeaderValue(value);
    else if (key === ANTHROPIC_BETA_QUERY_EXTENSION) betaQuery = value === true;
    else if (key.startsWith(OUTPUT_CONFIG_EXTENSION_PREFIX))
      body.output_config = { ...body.output_config, [key.slice(OUTPUT_CONFIG_EXTENSION_PREFIX.length)]: value };
    // Same protocol: the client's other Anthropic fields travel as sent, but never over a field built here.
    else if (!(key in body)) body[key] = value;
  }
  return { body, droppedParameters: dropped, betaHeader, betaQuery, jsonToolName: jsonMode?.tool.name };
}

/** An Anthropic client's `output_config`, rebuilt from the canonical request: its structured output and effort. */
function buildOutputConfig(request: CanonicalRequest): AnthropicOutputConfig | undefined {
  const config: AnthropicOutputConfig = {};
  const format = request.responseFormat;
  if (format?.type === 'json_schema' && format.schema !== undefined)
    config.format = { type: 'json_schema', schema: format.schema };
  if (request.reasoning?.effort !== undefined) config.effort = request.reasoning.effort;
  return Object.keys(config).length === 0 ? undefined : config;
}

/** The `/v1/messages/count_tokens` body: the Messages body without its generation controls. */
export function buildAnthropicCountTokensRequest(
  request: CanonicalRequest,
  model: CatalogModel,
): { body: Record<string, unknown>; betaHeader: string | undefined; betaQuery: boolean } {
  const built = buildAnthropicRequest({ ...request, stream: false }, model, { automaticCaching: false });
  const body: Record<string, unknown> = { model: built.body.model, messages: built.body.messages };
  for (const key of ['system', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control'] as const) {
    if (built.body[key] !== undefined) body[key] = built.body[key];
  }
  return { body, betaHeader: built.betaHeader, betaQuery: built.betaQuery };
}

function thinkingConfig(
  intent: ReturnType<typeof thinkingIntent>['kind'],
  budgetTokens: number | undefined,
  display: 'summarized' | 'omitted' | 'updates' | undefined,
): AnthropicThinkingConfig | undefined {
  const shown = display === undefined ? {} : { display };
  if (budgetTokens !== undefined) return { type: 'enabled', budget_tokens: budgetTokens, ...shown };
  if (intent === 'adaptive') return { type: 'adaptive', ...shown };
  if (intent === 'between-tools') return { type: 'between_tools' };
  return intent === 'disabled' ? { type: 'disabled' } : undefined;
}

function applySampling(
  request: CanonicalRequest,
  body: AnthropicMessagesRequest,
  dropped: string[],
  thinkingOn: boolean,
  rule: AnthropicSamplingRule,
): void {
  const { sampling } = request;
  if (rule === 'none') {
    // Models that take no sampling field: left out, reported unless it asked for the default (temperature 1).
    if (sampling.temperature !== undefined && sampling.temperature !== 1) dropped.push('temperature');
    if (sampling.topP !== undefined) dropped.push('top_p');
    if (sampling.topK !== undefined) dropped.push('top_k');
  } else applyTunableSampling(sampling, body, dropped, thinkingOn, rule);
  if (sampling.stop !== undefined) {
    // Anthropic refuses empty and whitespace-only stop sequences.
    const stop = sampling.stop.filter((sequence) => sequence.trim() !== '');
    if (stop.length < sampling.stop.length)
      dropped.push(request.extensionsProtocol === 'anthropic-messages' ? 'stop_sequences' : 'stop');
    if (stop.length > 0) body.stop_sequences = stop;
  }
  if (sampling.presencePenalty !== undefined) dropped.push('presence_penalty');
  if (sampling.frequencyPenalty !== undefined) dropped.push('frequency_penalty');
  if (sampling.seed !== undefined) dropped.push('seed');
}

/** `temperature`, `top_p` and `top_k` for a model that takes them, within what thinking and the model allow. */
function applyTunableSampling(
  sampling: CanonicalRequest['sampling'],
  body: AnthropicMessagesRequest,
  dropped: string[],
  thinkingOn: boolean,
  rule: AnthropicSamplingRule,
): void {
  if (sampling.temperature !== undefined) {
    // Anthropic's range is 0–1; above that the closest it has is 1 (clamping, not scaling, keeps 0.7 meaning 0.7).
    // Thinking runs at temperature 1 only; a client value of 1 loses nothing and is not reported.
    if (thinkingOn) {
      if (sampling.temperature !== 1) dropped.push('temperature');
    } else body.temperature = Math.min(sampling.temperature, 1);
  }
  if (sampling.topP !== undefined) {
    if (thinkingOn && sampling.topP < THINKING_MIN_TOP_P) dropped.push('top_p');
    // These models refuse both at once: the temperature, sent, says the most of what the client wanted.
    else if (rule === 'temperature-or-top-p' && body.temperature !== undefined) dropped.push('top_p');
    else body.top_p = sampling.topP;
  }
  if (sampling.topK !== undefined) {
    if (thinkingOn) dropped.push('top_k');
    else body.top_k = sampling.topK;
  }
}

function buildTools(request: CanonicalRequest): AnthropicTool[] {
  const parametersField = request.extensionsProtocol === 'openai-chat' ? 'function.parameters' : 'input_schema';
  return (request.tools ?? []).map((tool, index) => {
    // In the order of Anthropic's own Tool type, as clients send it: a vendor that counts or caches the definitions'
    // text then sees the same prefix as from the client directly.
    const built: AnthropicTool = {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      input_schema: objectSchema(tool.parameters, `tools[${index}].${parametersField}`),
    };
    // `strict: false` is the default; leaving it out keeps the body valid where the field is not known.
    if (tool.strict === true) built.strict = true;
    if (tool.deferLoading !== undefined) built.defer_loading = tool.deferLoading;
    return withCacheControl(built, tool.cache);
  });
}

/**
 * Canonical tool choice → Anthropic's. `parallelToolCalls: false` becomes `disable_parallel_tool_use` (which `none`
 * does not take). Without tools there is nothing to choose and the field is left out. With thinking on, a forced
 * choice is refused by Anthropic (docs/protocols/translation.md#forced-tool-use-with-thinking): it is downgraded to
 * `auto` and `tool_choice` reported as dropped.
 */
function buildToolChoice(
  request: CanonicalRequest,
  hasTools: boolean,
  thinkingOn: boolean,
  dropped: string[],
): AnthropicToolChoice | undefined {
  if (!hasTools) return undefined;
  let choice: ToolChoice | undefined = request.toolChoice;
  if (thinkingOn && (choice?.type === 'required' || choice?.type === 'tool')) {
    dropped.push('tool_choice');
    choice = { type: 'auto' };
  }
  if (choice?.type === 'none') return { type: 'none' };
  const disableParallel = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  switch (choice?.type) {
    case undefined:
      return request.parallelToolCalls === false ? { type: 'auto', disable_parallel_tool_use: true } : undefined;
    case 'auto':
      return { type: 'auto', ...disableParallel };
    case 'required':
      return { type: 'any', ...disableParallel };
    case 'tool':
      return { type: 'tool', name: choice.name, ...disableParallel };
  }
}

/** The header as the client sent it: one comma-separated string (a repeated header may arrive as a list). */
function betaHeaderValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value;
  if (Array.isArray(value)) {
    const joined = value.filter((item): item is string => typeof item === 'string' && item.trim() !== '').join(',');
    return joined === '' ? undefined : joined;
  }
  return undefined;
}
