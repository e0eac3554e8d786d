import { clientJsonBodyOf } from '../../canonical/client-json-body.js';
import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type { ServerToolDefinition, WebSearchOptions } from '../../canonical/server-tools.js';
import type {
  CacheBreakpoint,
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  ResponseFormat,
  SamplingParameters,
  TextBlock,
  ToolChoice,
  ToolResultBlock,
} from '../../canonical/request.js';
import { CacheBreakpointPaths } from '../shared/cache-breakpoint-rules.js';
import { documentSourceFromFileData, imageSourceFromUrl } from '../shared/data-url.js';
import { validationError } from '../shared/format-validation-error.js';
import { applyFallbackModels } from '../shared/fallback-models-field.js';
import { decodePromptCacheFields } from '../shared/prompt-cache-fields.js';
import { isPlainOpenAIChatBody } from './plain-chat-body.js';
import {
  CANONICAL_FIELDS,
  openAIChatRequestSchema,
  type OpenAIChatCacheControl,
  type OpenAIChatRequestBody,
  type OpenAIChatRequestMessage,
} from './openai-chat-schema.js';

export interface DecodedOpenAIChatRequest {
  request: CanonicalRequest;
  /** `stream_options.include_usage`: the client wants the final usage chunk. */
  includeUsage: boolean;
}

/** `web_search_options` → a web search, which every family with one runs (OpenAI's search models take it as is). */
function decodeWebSearchOptions(
  options: NonNullable<OpenAIChatRequestBody['web_search_options']>,
): ServerToolDefinition {
  const webSearch: WebSearchOptions = {};
  if (options.search_context_size !== undefined) webSearch.contextSize = options.search_context_size;
  const location = options.user_location?.approximate;
  if (location !== undefined) webSearch.userLocation = { ...location };
  return { kind: 'web-search', label: 'web_search_options', param: 'web_search_options', webSearch };
}

/** An OpenAI chat-completions body → the canonical request, or a 400 naming the field at fault. */
export function decodeOpenAIChatRequest(body: unknown): DecodedOpenAIChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object.');
  }
  const input = isPlainOpenAIChatBody(body) ? body : parseBody(body);
  rejectContractChanges(input);

  const breakpoints = new CacheBreakpointPaths();
  const { system, messages } = decodeMessages(input.messages, breakpoints);
  const extensions: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    if (!CANONICAL_FIELDS.has(field) && value !== undefined) extensions[field] = value;
  }
  const maxOutputTokens = input.max_completion_tokens ?? input.max_tokens ?? undefined;
  const stop = typeof input.stop === 'string' ? [input.stop] : (input.stop ?? undefined);
  const request: CanonicalRequest = {
    model: input.model === undefined || input.model === null ? '' : String(input.model),
    system,
    messages,
    sampling: samplingOf(input, stop),
    stream: input.stream === true,
    extensions,
    extensionsProtocol: 'openai-chat',
  };
  if (maxOutputTokens !== undefined) request.maxOutputTokens = maxOutputTokens;
  const clientBody = clientJsonBodyOf(body);
  if (clientBody !== undefined) request.clientBody = clientBody;
  applyFallbackModels(request, input.models);
  if (input.web_search_options !== undefined && input.web_search_options !== null)
    request.serverTools = [decodeWebSearchOptions(input.web_search_options)];
  if (input.tools !== undefined) {
    request.tools = input.tools.map((tool, index) => {
      const fn = tool.function;
      // LiteLLM reads the breakpoint on the tool or inside its function; the tool's own wins.
      const cache =
        breakpoints.take(tool.cache_control, `tools[${index}].cache_control`) ??
        breakpoints.take(fn.cache_control, `tools[${index}].function.cache_control`);
      return definedOnly({
        name: fn.name,
        description: fn.description,
        parameters: fn.parameters,
        strict: fn.strict ?? undefined,
        cache,
      });
    });
  }
  if (input.tool_choice !== undefined) request.toolChoice = decodeToolChoice(input.tool_choice);
  if (input.parallel_tool_calls !== undefined && input.parallel_tool_calls !== null) {
    request.parallelToolCalls = input.parallel_tool_calls;
  }
  if (input.response_format !== undefined) request.responseFormat = decodeResponseFormat(input.response_format);
  if (input.reasoning_effort !== undefined && input.reasoning_effort !== null) {
    request.reasoning = { effort: input.reasoning_effort };
  }
  if (input.user !== undefined) request.user = input.user;
  decodeOutputOptions(input, request);
  decodePromptCacheFields(input, request);
  const automatic = breakpoints.take(input.cache_control, 'cache_control');
  if (automatic !== undefined) request.cache = automatic;
  breakpoints.check(request);
  return { request, includeUsage: request.stream && input.stream_options?.include_usage === true };
}

function parseBody(body: unknown): OpenAIChatRequestBody {
  const parsed = openAIChatRequestSchema.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error);
  return parsed.data;
}

/**
 * The sampling parameters the client set (null counts as unset), in the canonical order. Built up rather than
 * made with every key and then trimmed: deleting keys turns an object into a slow dictionary for whoever reads it.
 */
function samplingOf(input: OpenAIChatRequestBody, stop: string[] | undefined): SamplingParameters {
  const sampling: SamplingParameters = {};
  if (input.temperature !== undefined && input.temperature !== null) sampling.temperature = input.temperature;
  if (input.top_p !== undefined && input.top_p !== null) sampling.topP = input.top_p;
  if (stop !== undefined) sampling.stop = stop;
  if (input.seed !== undefined && input.seed !== null) sampling.seed = input.seed;
  if (input.presence_penalty !== undefined && input.presence_penalty !== null)
    sampling.presencePenalty = input.presence_penalty;
  if (input.frequency_penalty !== undefined && input.frequency_penalty !== null)
    sampling.frequencyPenalty = input.frequency_penalty;
  return sampling;
}

/**
 * `n` and `logprobs` / `top_logprobs`: served where the model's vendor can give them, refused (by the pipeline, once
 * the model is known) where it cannot. `top_logprobs` without `logprobs: true` is OpenAI's own 400.
 */
function decodeOutputOptions(input: OpenAIChatRequestBody, request: CanonicalRequest): void {
  if (input.n !== undefined && input.n !== null && input.n > 1) request.choices = { count: input.n, param: 'n' };
  const top = input.top_logprobs ?? undefined;
  if (input.logprobs === true) request.logprobs = { topCandidates: top ?? 0, param: 'logprobs' };
  else if (top !== undefined) throw invalidRequest("'top_logprobs' requires 'logprobs' to be true.", 'top_logprobs');
}

/** Parameters whose meaning the gateway cannot keep: refused rather than silently changed. */
function rejectContractChanges(input: OpenAIChatRequestBody): void {
  if (input.stream_options != null && input.stream !== true) {
    throw invalidRequest("'stream_options' is only allowed when 'stream' is true.", 'stream_options');
  }
}

function decodeMessages(
  input: OpenAIChatRequestMessage[],
  breakpoints: CacheBreakpointPaths,
): { system: TextBlock[]; messages: CanonicalMessage[] } {
  const system: TextBlock[] = [];
  const messages: CanonicalMessage[] = [];
  const pendingToolCalls = new Set<string>();
  input.forEach((message, index) => {
    const param = `messages[${index}]`;
    // A breakpoint on the message itself (LiteLLM's form, the only one a string content has) marks its last block.
    const onMessage = (content: ContentBlock[]) =>
      markLastBlock(content, breakpoints.take(message.cache_control, `${param}.cache_control`));
    switch (message.role) {
      case 'system':
      case 'developer': {
        const content = textBlocks(message.content, `${param}.content`, breakpoints);
        onMessage(content);
        // Leading system prompts go to the top-level slot every vendor has; later ones keep their place.
        if (messages.length === 0) system.push(...content);
        else messages.push({ role: 'system', content });
        return;
      }
      case 'user':
        pendingToolCalls.clear();
        messages.push(
          withName(
            { role: 'user', content: onMessage(userContent(message.content, `${param}.content`, breakpoints)) },
            message.name,
          ),
        );
        return;
      case 'assistant': {
        pendingToolCalls.clear();
        const content: ContentBlock[] = [];
        if (message.reasoning_content) content.push({ type: 'reasoning', text: message.reasoning_content });
        content.push(...assistantText(message.content, `${param}.content`, breakpoints));
        for (const call of message.tool_calls ?? []) {
          pendingToolCalls.add(call.id);
          content.push({
            type: 'tool-call',
            id: call.id,
            name: call.function.name,
            argumentsJson: call.function.arguments,
          });
        }
        if (content.length === 0 && message.content == null) {
          throw invalidRequest(
            `'${param}.content' is required unless the assistant message has 'tool_calls'.`,
            `${param}.content`,
          );
        }
        messages.push(withName({ role: 'assistant', content: onMessage(content) }, message.name));
        return;
      }
      case 'tool': {
        if (!pendingToolCalls.has(message.tool_call_id)) {
          throw invalidRequest(
            `'${param}' is a tool result for '${message.tool_call_id}', but no preceding assistant message has a tool call with that id.`,
            `${param}.tool_call_id`,
          );
        }
        pendingToolCalls.delete(message.tool_call_id);
        const result: ToolResultBlock = {
          type: 'tool-result',
          toolCallId: message.tool_call_id,
          content: textBlocks(message.content, `${param}.content`, breakpoints),
          isError: false,
        };
        onMessage([result]);
        const previous = messages[messages.length - 1];
        // One user message per tool turn: parallel results stay together (vendors that group them need it).
        if (previous?.role === 'user' && previous.content.every((block) => block.type === 'tool-result'))
          previous.content.push(result);
        else messages.push({ role: 'user', content: [result] });
        return;
      }
    }
  });
  return { system, messages };
}

function textBlocks(
  content: string | Array<{ text: string; cache_control?: OpenAIChatCacheControl }>,
  param: string,
  breakpoints: CacheBreakpointPaths,
): TextBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part, index) =>
    withCache<TextBlock>(
      { type: 'text', text: part.text },
      breakpoints.take(part.cache_control, `${param}[${index}].cache_control`),
    ),
  );
}

/**
 * An assistant message's text as one block, refusals included, as the vendors take it; a part that carries a
 * breakpoint ends a block of its own, so the breakpoint stays where the client put it.
 */
function assistantText(
  content: Extract<OpenAIChatRequestMessage, { role: 'assistant' }>['content'],
  param: string,
  breakpoints: CacheBreakpointPaths,
): TextBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const blocks: TextBlock[] = [];
  let text = '';
  (content ?? []).forEach((part, index) => {
    text += part.type === 'text' ? part.text : part.refusal;
    const cache =
      part.type === 'text' ? breakpoints.take(part.cache_control, `${param}[${index}].cache_control`) : undefined;
    if (cache === undefined) return;
    blocks.push({ type: 'text', text, cache });
    text = '';
  });
  if (text !== '') blocks.push({ type: 'text', text });
  return blocks;
}

/** A message-level breakpoint on the last block, unless that block carries its own. */
function markLastBlock<T extends ContentBlock>(content: T[], cache: CacheBreakpoint | undefined): T[] {
  const last = content.at(-1);
  if (cache !== undefined && last !== undefined && last.type !== 'reasoning' && last.cache === undefined)
    last.cache = cache;
  return content;
}

function withCache<T extends { cache?: CacheBreakpoint }>(block: T, cache: CacheBreakpoint | undefined): T {
  if (cache !== undefined) block.cache = cache;
  return block;
}

function userContent(
  content: Extract<OpenAIChatRequestMessage, { role: 'user' }>['content'],
  param: string,
  breakpoints: CacheBreakpointPaths,
): ContentBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part, index): ContentBlock => {
    const partParam = `${param}[${index}]`;
    const cache = breakpoints.take(part.cache_control, `${partParam}.cache_control`);
    switch (part.type) {
      case 'text':
        return withCache<TextBlock>({ type: 'text', text: part.text }, cache);
      case 'image_url': {
        const image: ImageBlock = {
          type: 'image',
          source: imageSourceFromUrl(part.image_url.url, `${partParam}.image_url.url`),
        };
        if (part.image_url.detail !== undefined) image.detail = part.image_url.detail;
        return withCache(image, cache);
      }
      case 'file': {
        const { file_data: fileData, filename } = part.file;
        if (fileData === undefined) {
          throw new GatewayError(
            'unsupported_parameter',
            `'${partParam}.file' refers to an uploaded file: send it inline as 'file_data'.`,
            { param: `${partParam}.file.file_id` },
          );
        }
        const document: DocumentBlock = {
          type: 'document',
          source: documentSourceFromFileData(fileData, filename, `${partParam}.file.file_data`),
        };
        if (filename !== undefined) document.title = filename;
        return withCache(document, cache);
      }
      default:
        throw new GatewayError('unsupported_parameter', `Content parts of type '${part.type}' are not supported yet.`, {
          param: `${partParam}.type`,
        });
    }
  });
}

function decodeToolChoice(choice: NonNullable<OpenAIChatRequestBody['tool_choice']>): ToolChoice {
  if (typeof choice === 'string') return { type: choice };
  return { type: 'tool', name: choice.function.name };
}

function decodeResponseFormat(format: NonNullable<OpenAIChatRequestBody['response_format']>): ResponseFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, description, schema, strict } = format.json_schema;
  return definedOnly({ type: 'json_schema' as const, name, description, schema, strict: strict ?? undefined });
}

function withName(message: CanonicalMessage, name: string | undefined): CanonicalMessage {
  if (name !== undefined) message.name = name;
  return message;
}

/** Drops undefined members so optional fields stay absent (exactOptionalPropertyTypes-friendly, smaller JSON). */
function definedOnly<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  for (const key of Object.keys(value) as Array<keyof T>) if (value[key] === undefined) delete value[key];
  return value as { [K in keyof T]: Exclude<T[K], undefined> };
}
