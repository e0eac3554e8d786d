import { clientJsonBodyOf } from '../../canonical/client-json-body.js';
import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import { parseSignature } from '../../canonical/reasoning-signature.js';
import {
  ANTHROPIC_BETA_EXTENSION,
  ANTHROPIC_BETA_QUERY_EXTENSION,
  OUTPUT_CONFIG_EXTENSION_PREFIX,
} from '../../canonical/request.js';
import type {
  CacheBreakpoint,
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  ReasoningParameters,
  TextBlock,
  ToolChoice,
  ToolDefinition,
} from '../../canonical/request.js';
import type { ServerToolDefinition } from '../../canonical/server-tools.js';
import { CacheBreakpointPaths } from '../shared/cache-breakpoint-rules.js';
import { applyFallbackModels } from '../shared/fallback-models-field.js';
import { parseRequestBody } from '../shared/format-validation-error.js';
import {
  anthropicCountTokensRequestSchema,
  anthropicMessagesRequestSchema,
  CANONICAL_FIELDS,
  type AnthropicMessagesRequestBody,
  type AnthropicOutputConfig,
  type AnthropicRequestMessage,
  type AnthropicToolParam,
  type AnthropicToolResultPart,
  type AnthropicUserBlock,
} from './anthropic-messages-schema.js';
import { decodeAnthropicServerBlock, decodeAnthropicServerTool } from './anthropic-decode-server-tools.js';
import { anthropicCitedSource } from '../../wire/anthropic-server-blocks.js';

/** What the client sent outside the body: the `anthropic-beta` header and the `?beta=true` query flag. */
export interface AnthropicRequestFlags {
  anthropicBeta?: string | undefined;
  betaQuery?: boolean;
}

/** An Anthropic Messages body → the canonical request, or a 400 naming the field at fault. */
export function decodeAnthropicMessagesRequest(body: unknown, flags: AnthropicRequestFlags = {}): CanonicalRequest {
  const input = parseRequestBody(body, anthropicMessagesRequestSchema);
  const request = decodePrompt(input, flags);
  request.maxOutputTokens = input.max_tokens;
  request.stream = input.stream === true;
  const clientBody = clientJsonBodyOf(body);
  if (clientBody !== undefined) request.clientBody = clientBody;
  const sampling = request.sampling;
  if (input.temperature !== undefined) sampling.temperature = input.temperature;
  if (input.top_p !== undefined) sampling.topP = input.top_p;
  if (input.top_k !== undefined) sampling.topK = input.top_k;
  if (input.stop_sequences !== undefined && input.stop_sequences.length > 0) sampling.stop = input.stop_sequences;
  if (input.metadata?.user_id) request.user = input.metadata.user_id;
  applyFallbackModels(request, input.models);
  // A budget not below max_tokens is lowered by the pipeline, once the model's output limit is applied.
  return request;
}

/** The prompt part only, as `/v1/messages/count_tokens` receives it (no max_tokens). */
export function decodeAnthropicCountTokensRequest(body: unknown, flags: AnthropicRequestFlags = {}): CanonicalRequest {
  return decodePrompt(parseRequestBody(body, anthropicCountTokensRequestSchema), flags);
}

type PromptInput = Pick<
  AnthropicMessagesRequestBody,
  'model' | 'messages' | 'system' | 'tools' | 'tool_choice' | 'thinking' | 'output_config' | 'cache_control'
> &
  Record<string, unknown>;

function decodePrompt(input: PromptInput, flags: AnthropicRequestFlags): CanonicalRequest {
  rejectThread(input.thread);
  const extensions: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    // `null` means "not set" for every optional field of the current API (`container: null`, `thread: null`).
    if (!CANONICAL_FIELDS.has(field) && value !== undefined && value !== null && field !== 'thread')
      extensions[field] = value;
  }
  if (flags.anthropicBeta !== undefined && flags.anthropicBeta !== '')
    extensions[ANTHROPIC_BETA_EXTENSION] = flags.anthropicBeta;
  if (flags.betaQuery === true) extensions[ANTHROPIC_BETA_QUERY_EXTENSION] = true;
  // `output_config` members beyond format and effort (the beta `task_budget`) travel like any other extension.
  for (const [member, value] of Object.entries(input.output_config ?? {})) {
    if (member !== 'format' && member !== 'effort' && value !== undefined && value !== null)
      extensions[`${OUTPUT_CONFIG_EXTENSION_PREFIX}${member}`] = value;
  }
  const breakpoints = new CacheBreakpointPaths(true);
  const request: CanonicalRequest = {
    model: input.model === undefined || input.model === null ? '' : String(input.model),
    system: decodeSystem(input.system, breakpoints),
    messages: decodeMessages(input.messages, breakpoints),
    sampling: {},
    stream: false,
    extensions,
    extensionsProtocol: 'anthropic-messages',
  };
  // System messages before the conversation starts are the system prompt, in every vendor's top-level slot.
  while (request.messages[0]?.role === 'system')
    request.system.push(...(request.messages.shift()!.content as TextBlock[]));
  if (request.messages.length === 0)
    throw invalidRequest(
      "'messages' must contain at least one user or assistant message, not only system messages.",
      'messages',
    );
  if (input.tools !== undefined) {
    const tools: ToolDefinition[] = [];
    const serverTools: ServerToolDefinition[] = [];
    input.tools.forEach((tool, index) => {
      const cache = breakpoints.take(tool.cache_control, `tools[${index}].cache_control`);
      if (!isCustomTool(tool)) {
        // Anthropic's own tool: its `cache_control` stays in the object replayed to Anthropic.
        serverTools.push(decodeAnthropicServerTool(tool, `tools[${index}]`));
        return;
      }
      tools.push({
        name: tool.name,
        parameters: tool.input_schema,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        ...(tool.strict === undefined ? {} : { strict: tool.strict }),
        ...(tool.defer_loading === undefined ? {} : { deferLoading: tool.defer_loading }),
        ...withCache(cache),
      });
    });
    request.tools = tools;
    if (serverTools.length > 0) request.serverTools = serverTools;
  }
  const automatic = breakpoints.take(input.cache_control, 'cache_control');
  if (automatic !== undefined) request.cache = automatic;
  breakpoints.check(request);
  if (input.tool_choice !== undefined) {
    request.toolChoice = decodeToolChoice(input.tool_choice);
    if ('disable_parallel_tool_use' in input.tool_choice && input.tool_choice.disable_parallel_tool_use === true) {
      request.parallelToolCalls = false;
    }
  }
  const reasoning = decodeReasoning(input.thinking, input.output_config);
  if (reasoning !== undefined) request.reasoning = reasoning;
  const format = input.output_config?.format;
  // The schema travels unchanged (docs/protocols/translation.md#structured-output); `output` names it for vendors that
  // want a name.
  if (format !== undefined && format !== null)
    request.responseFormat = { type: 'json_schema', name: 'output', schema: format.schema };
  return request;
}

function isCustomTool(tool: AnthropicToolParam): tool is Extract<AnthropicToolParam, { input_schema: unknown }> {
  return tool.type === undefined || tool.type === 'custom';
}

/**
 * Message threads (the beta `thread` field: the server keeps the conversation, the client sends only new turns)
 * need a conversation store the gateway does not have, and dropping the field would leave the next call's
 * tool_result answering nothing. Refused with the error code the SDK's thread helpers recognise
 * (`thread_unsupported_request`; with `unsupportedRequestBehavior: "continue_unthreaded"` they resend the whole
 * history without `thread`).
 */
function rejectThread(thread: unknown): void {
  if (thread === undefined || thread === null) return;
  throw new GatewayError(
    'unsupported_parameter',
    "Message threads ('thread') are not supported by this gateway: send the whole conversation in 'messages' without 'thread'.",
    { param: 'thread', details: { error_code: 'thread_unsupported_request', unsupported: [] } },
  );
}

function decodeSystem(system: PromptInput['system'], breakpoints: CacheBreakpointPaths): TextBlock[] {
  if (system === undefined) return [];
  if (typeof system === 'string') return system.trim() === '' ? [] : [{ type: 'text', text: system }];
  return system.map((block, index) => ({
    type: 'text',
    text: block.text,
    ...withCache(breakpoints.take(block.cache_control, `system[${index}].cache_control`)),
  }));
}

/** `{ cache }` when there is a breakpoint, `{}` otherwise: optional fields stay absent. */
function withCache(cache: CacheBreakpoint | undefined): { cache?: CacheBreakpoint } {
  return cache === undefined ? {} : { cache };
}

/**
 * Messages, with Anthropic's tool-use protocol checked: every tool_use is answered by a tool_result in the
 * very next user message, and no tool_result answers nothing. The vendor enforces this; so do we, for all.
 */
function decodeMessages(input: AnthropicRequestMessage[], breakpoints: CacheBreakpointPaths): CanonicalMessage[] {
  const messages: CanonicalMessage[] = [];
  let openToolUses = new Set<string>();
  input.forEach((message, index) => {
    const param = `messages[${index}]`;
    if (message.role === 'system') {
      // A tool_result must be in the message right after its tool_use: an instruction cannot sit between them.
      if (openToolUses.size > 0) throw unansweredToolUse(openToolUses, param);
      // `clear_at: next_user_message` applies to the next turn only: once a user message follows, it is over.
      if (message.clear_at === 'next_user_message' && input.slice(index + 1).some((later) => later.role === 'user'))
        return;
      const content =
        typeof message.content === 'string'
          ? [{ type: 'text' as const, text: message.content }]
          : message.content.map((block, blockIndex) => ({
              type: 'text' as const,
              text: block.text,
              ...withCache(breakpoints.take(block.cache_control, `${param}.content[${blockIndex}].cache_control`)),
            }));
      messages.push({ role: 'system', content });
      return;
    }
    if (message.role === 'assistant') {
      if (openToolUses.size > 0) throw unansweredToolUse(openToolUses, param);
      const content = decodeAssistantContent(message.content, param, breakpoints);
      openToolUses = new Set(content.flatMap((block) => (block.type === 'tool-call' ? [block.id] : [])));
      messages.push({ role: 'assistant', content });
      return;
    }
    const blocks: AnthropicUserBlock[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    const content = blocks.map((block, blockIndex) => {
      if (block.type === 'tool_result' && !openToolUses.delete(block.tool_use_id)) {
        throw invalidRequest(
          `'${param}.content[${blockIndex}]' is a tool_result for '${block.tool_use_id}', which is not a tool_use of the previous assistant message.`,
          `${param}.content[${blockIndex}].tool_use_id`,
        );
      }
      return decodeUserBlock(block, `${param}.content[${blockIndex}]`, breakpoints);
    });
    if (openToolUses.size > 0) throw unansweredToolUse(openToolUses, param);
    messages.push({ role: 'user', content });
  });
  return messages;
}

function unansweredToolUse(ids: Set<string>, param: string) {
  return invalidRequest(
    `tool_use ids were found without tool_result blocks immediately after: ${[...ids].join(', ')}. Each tool_use block must have a corresponding tool_result block in the next message (${param}).`,
    param,
  );
}

function decodeAssistantContent(
  content: Extract<AnthropicRequestMessage, { role: 'assistant' }>['content'],
  param: string,
  breakpoints: CacheBreakpointPaths,
): ContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch covers every block type, as TypeScript checks.
  return content.map((block, index): ContentBlock => {
    const cacheParam = `${param}.content[${index}].cache_control`;
    switch (block.type) {
      case 'text':
        return {
          type: 'text',
          text: block.text,
          ...withCache(breakpoints.take(block.cache_control, cacheParam)),
          ...(block.citations ? { citations: block.citations.map(anthropicCitedSource) } : {}),
        };
      case 'server_tool_use':
      case 'web_search_tool_result':
      case 'web_fetch_tool_result':
      case 'code_execution_tool_result':
      case 'bash_code_execution_tool_result':
      case 'text_editor_code_execution_tool_result':
      case 'tool_search_tool_result':
        return {
          ...decodeAnthropicServerBlock(block),
          ...withCache(breakpoints.take(block.cache_control, cacheParam)),
        };
      case 'tool_use':
        return {
          type: 'tool-call',
          id: block.id,
          name: block.name,
          argumentsJson: JSON.stringify(block.input),
          ...withCache(breakpoints.take(block.cache_control, cacheParam)),
        };
      case 'thinking': {
        const { originVendor, signature } = parseSignature(block.signature);
        return {
          type: 'reasoning',
          text: block.thinking,
          ...(signature === undefined ? {} : { signature }),
          ...(originVendor === undefined ? {} : { originVendor }),
        };
      }
      case 'redacted_thinking':
        return { type: 'reasoning', text: '', redactedData: block.data, originVendor: 'anthropic' };
    }
  });
}

function decodeUserBlock(block: AnthropicUserBlock, param: string, breakpoints: CacheBreakpointPaths): ContentBlock {
  const cache = withCache(breakpoints.take(block.cache_control, `${param}.cache_control`));
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text, ...cache };
    case 'image':
      return { ...decodeImage(block), ...cache };
    case 'document':
      return { ...decodeDocument(block), ...cache };
    case 'tool_result': {
      const parts =
        block.content === undefined
          ? []
          : typeof block.content === 'string'
            ? [{ type: 'text' as const, text: block.content }]
            : block.content;
      const content = parts.map((part: AnthropicToolResultPart, index): TextBlock | ImageBlock => {
        const partCache = withCache(breakpoints.take(part.cache_control, `${param}.content[${index}].cache_control`));
        if (part.type === 'text') return { type: 'text', text: part.text, ...partCache };
        if (part.type === 'image') return { ...decodeImage(part), ...partCache };
        throw invalidRequest(
          `Documents inside tool results are not supported ('${param}.content[${index}]').`,
          `${param}.content[${index}]`,
        );
      });
      return {
        type: 'tool-result',
        toolCallId: block.tool_use_id,
        content,
        isError: block.is_error === true,
        ...cache,
      };
    }
  }
}

function decodeImage(block: Extract<AnthropicUserBlock, { type: 'image' }>): ImageBlock {
  const source = block.source;
  return {
    type: 'image',
    source:
      source.type === 'base64'
        ? { kind: 'base64', mediaType: source.media_type, data: source.data }
        : { kind: 'url', url: source.url },
  };
}

function decodeDocument(block: Extract<AnthropicUserBlock, { type: 'document' }>): ContentBlock {
  const source = block.source;
  if (source.type === 'text') {
    // A plain-text document is text to every vendor; keep its title as a heading so nothing is lost.
    return { type: 'text', text: block.title ? `${block.title}\n\n${source.data}` : source.data };
  }
  const document: DocumentBlock = {
    type: 'document',
    source:
      source.type === 'base64'
        ? { kind: 'base64', mediaType: source.media_type, data: source.data }
        : { kind: 'url', url: source.url },
  };
  if (block.title) document.title = block.title;
  return document;
}

function decodeToolChoice(choice: NonNullable<PromptInput['tool_choice']>): ToolChoice {
  switch (choice.type) {
    case 'auto':
      return { type: 'auto' };
    case 'none':
      return { type: 'none' };
    case 'any':
      return { type: 'required' };
    case 'tool':
      return { type: 'tool', name: choice.name };
  }
}

/** `thinking` and `output_config.effort` → the canonical reasoning parameters. */
function decodeReasoning(
  thinking: PromptInput['thinking'],
  outputConfig: AnthropicOutputConfig | undefined,
): ReasoningParameters | undefined {
  const effort = outputConfig?.effort ?? undefined;
  const reasoning: ReasoningParameters | undefined = thinking === undefined ? undefined : decodeThinking(thinking);
  if (effort === undefined) return reasoning;
  return { ...reasoning, effort };
}

function decodeThinking(thinking: NonNullable<PromptInput['thinking']>): ReasoningParameters {
  switch (thinking.type) {
    case 'disabled':
      return { enabled: false };
    case 'between_tools':
      return { enabled: true, mode: 'between-tools' };
    case 'adaptive':
      return { enabled: true, mode: 'adaptive', ...displayOf(thinking.display) };
    case 'enabled':
      return { enabled: true, budgetTokens: thinking.budget_tokens, ...displayOf(thinking.display) };
  }
}

function displayOf(display: ReasoningParameters['display'] | null): Pick<ReasoningParameters, 'display'> {
  return display === undefined || display === null ? {} : { display };
}
