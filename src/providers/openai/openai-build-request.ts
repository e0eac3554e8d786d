import { createHash } from 'node:crypto';
import { GatewayError } from '../../canonical/errors.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  DocumentBlock,
  ToolChoice,
  ToolDefinition,
} from '../../canonical/request.js';
import { applyWebSearch, requestedWebSearch } from './openai-web-search.js';
import type {
  OpenAIContentPart,
  OpenAIFilePart,
  OpenAIMessage,
  OpenAITextPart,
  OpenAIToolCall,
} from '../../wire/openai-chat-wire.js';

/** OpenAI's o-series reasoning models (o1, o3, o4-mini, …). */
const O_SERIES_MODEL = /^o\d/;

export interface BuiltOpenAIRequest {
  body: Record<string, unknown>;
  droppedParameters: string[];
}

/** What the request builders may read of the call beyond the request (read only when needed: it may be computed). */
export interface ConversationHint {
  readonly affinityKey?: string;
}

/**
 * Canonical request → OpenAI chat-completions body. Extensions from an OpenAI client are forwarded untouched
 * (same protocol); from any other client they are dropped and reported. The prompt-cache key is the client's, or
 * one derived from the conversation's affinity key, so that every turn of a conversation reaches the same cache.
 */
export function buildOpenAIRequest(
  request: CanonicalRequest,
  upstreamModel: string,
  conversation?: ConversationHint,
): BuiltOpenAIRequest {
  const dropped: string[] = [];
  const body: Record<string, unknown> = { model: upstreamModel, messages: buildMessages(request) };
  const { sampling } = request;
  // o-series reasoning models refuse any temperature or top_p but the default (1): left out, and reported unless
  // the client asked for the default anyway.
  const reasoningModel = O_SERIES_MODEL.test(upstreamModel);
  for (const [field, value] of [
    ['temperature', sampling.temperature],
    ['top_p', sampling.topP],
  ] as const) {
    if (value === undefined) continue;
    if (!reasoningModel) body[field] = value;
    else if (value !== 1) dropped.push(field);
  }
  if (sampling.topK !== undefined) dropped.push('top_k');
  if (sampling.stop !== undefined && sampling.stop.length > 0) body.stop = sampling.stop;
  if (sampling.seed !== undefined) body.seed = sampling.seed;
  if (sampling.presencePenalty !== undefined) body.presence_penalty = sampling.presencePenalty;
  if (sampling.frequencyPenalty !== undefined) body.frequency_penalty = sampling.frequencyPenalty;
  // max_completion_tokens works on every current model; o-series reject the deprecated max_tokens.
  if (request.maxOutputTokens !== undefined) body.max_completion_tokens = request.maxOutputTokens;
  // Chat completions refuse tool_choice and parallel_tool_calls without tools; the Responses API takes them (Codex's
  // compaction turn sends them with no tools), and without tools they mean nothing, so they are left out.
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = buildOpenAITools(request.tools);
    if (request.toolChoice !== undefined) body.tool_choice = buildOpenAIToolChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  if (request.responseFormat !== undefined) body.response_format = buildResponseFormat(request);
  if (request.reasoning?.effort !== undefined) body.reasoning_effort = request.reasoning.effort;
  else if (request.reasoning?.budgetTokens !== undefined) dropped.push('reasoning_budget_tokens');
  // Reasoning turned off (Gemini's `thinkingBudget: 0`, Anthropic's `disabled`): the lowest effort the model has,
  // `none` on GPT-5 models; o-series models always reason, `low` the least.
  else if (request.reasoning?.enabled === false) body.reasoning_effort = reasoningModel ? 'low' : 'none';
  if (request.user !== undefined) body.user = request.user;
  if (request.safetyIdentifier !== undefined) body.safety_identifier = request.safetyIdentifier;
  if (request.choices !== undefined) body.n = request.choices.count;
  Object.assign(body, openAILogprobsFields(request));
  const cacheKey = request.promptCacheKey ?? derivedPromptCacheKey(conversation?.affinityKey);
  if (cacheKey !== undefined) body.prompt_cache_key = cacheKey;
  if (request.promptCacheRetention !== undefined) body.prompt_cache_retention = request.promptCacheRetention;
  if (request.extensionsProtocol === 'openai-chat') Object.assign(body, request.extensions);
  else dropped.push(...Object.keys(request.extensions));
  const search = requestedWebSearch(request);
  if (search !== undefined) applyWebSearch(body, request, search, dropped);
  body.stream = request.stream;
  // Always ask for usage: billing reads it, whatever the client asked for.
  if (request.stream) body.stream_options = { include_usage: true };
  return { body, droppedParameters: dropped };
}

/** `logprobs` / `top_logprobs` as every OpenAI-format vendor (DeepSeek too) takes them. */
export function openAILogprobsFields(request: CanonicalRequest): { logprobs?: true; top_logprobs?: number } {
  const logprobs = request.logprobs;
  if (logprobs === undefined) return {};
  return logprobs.topCandidates > 0 ? { logprobs: true, top_logprobs: logprobs.topCandidates } : { logprobs: true };
}

/** The key sent for a client that sent none: 35 characters, within OpenAI's 64. */
export function derivedPromptCacheKey(affinityKey: string | undefined): string | undefined {
  return affinityKey === undefined ? undefined : `tg-${affinityKey}`;
}

function buildResponseFormat(request: CanonicalRequest): Record<string, unknown> | undefined {
  const format = request.responseFormat;
  if (format === undefined || format.type !== 'json_schema') return format;
  const { type, ...jsonSchema } = format;
  return { type, json_schema: jsonSchema };
}

/** Tool definitions in the `tools` form every OpenAI-compatible server (DeepSeek too) accepts. */
export function buildOpenAITools(tools: readonly ToolDefinition[]): unknown[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      ...(tool.parameters === undefined ? {} : { parameters: tool.parameters }),
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
    },
  }));
}

export function buildOpenAIToolChoice(choice: ToolChoice): unknown {
  if (choice.type === 'tool') return { type: 'function', function: { name: choice.name } };
  return choice.type;
}

function buildMessages(request: CanonicalRequest): OpenAIMessage[] {
  const messages: OpenAIMessage[] = [];
  if (request.system.length > 0) messages.push({ role: 'system', content: textContent(request.system) });
  request.messages.forEach((message, index) => {
    messages.push(...buildOpenAIMessage(message, index));
  });
  return messages;
}

/**
 * One canonical message as OpenAI messages: an assistant message is always exactly one; a user message with
 * tool results becomes one `tool` message per result, then the user's own content. Exported for the
 * OpenAI-compatible adapters (DeepSeek), which post-process the result.
 */
export function buildOpenAIMessage(message: CanonicalMessage, index: number): OpenAIMessage[] {
  const name = message.name === undefined ? {} : { name: message.name };
  if (message.role === 'system') {
    return [{ role: 'system', content: textContent(textBlocks(message.content)), ...name }];
  }
  if (message.role === 'assistant') {
    const toolCalls: OpenAIToolCall[] = [];
    const text: OpenAITextPart[] = [];
    for (const block of message.content) {
      if (block.type === 'text') text.push({ type: 'text', text: block.text });
      else if (block.type === 'tool-call') {
        toolCalls.push({
          id: openAIToolCallId(block.id),
          type: 'function',
          function: { name: block.name, arguments: block.argumentsJson },
        });
      }
      // Reasoning blocks have no place in an OpenAI request: OpenAI keeps its reasoning server-side.
    }
    return [
      {
        role: 'assistant',
        content: text.length === 0 ? null : textContent(text),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        ...name,
      },
    ];
  }
  // A user message: tool results become `tool` messages first, the rest one user message after them.
  const out: OpenAIMessage[] = [];
  const parts: OpenAIContentPart[] = [];
  for (const block of message.content) {
    if (block.type === 'tool-result') {
      const text = block.content
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join('\n');
      out.push({
        role: 'tool',
        tool_call_id: openAIToolCallId(block.toolCallId),
        content: block.isError ? `[tool error] ${text}` : text,
      });
      for (const part of block.content) if (part.type === 'image') parts.push(imagePart(part));
    } else if (block.type === 'text') parts.push({ type: 'text', text: block.text });
    else if (block.type === 'image') parts.push(imagePart(block));
    else if (block.type === 'document') parts.push(filePart(block, `messages[${index}].content`));
  }
  if (parts.length > 0) {
    const allText = parts.every((part): part is OpenAITextPart => part.type === 'text');
    out.push({ role: 'user', content: allText ? textContent(parts) : parts, ...name });
  }
  return out;
}

/** OpenAI refuses tool-call ids longer than this. */
const OPENAI_TOOL_CALL_ID_MAX = 40;

/**
 * Ids minted by other vendors can be long (Gemini's carry their thought signature). A history that moves to an
 * OpenAI-format model gets them shortened by a hash, the same way in the call and in its result, so they pair.
 */
export function openAIToolCallId(id: string): string {
  if (id.length <= OPENAI_TOOL_CALL_ID_MAX) return id;
  return `call_${createHash('sha256')
    .update(id)
    .digest('hex')
    .slice(0, OPENAI_TOOL_CALL_ID_MAX - 'call_'.length)}`;
}

function imagePart(block: Extract<ContentBlock, { type: 'image' }>): OpenAIContentPart {
  const url =
    block.source.kind === 'url' ? block.source.url : `data:${block.source.mediaType};base64,${block.source.data}`;
  return { type: 'image_url', image_url: { url, ...(block.detail === undefined ? {} : { detail: block.detail }) } };
}

/**
 * A document as a chat-completions `file` part. Chat completions read files only inline or uploaded to OpenAI,
 * never from a URL, so a document URL is refused rather than left out (the model would answer without it).
 * OpenAI requires a filename with `file_data`; one is made up from the media type when the client gave none.
 */
function filePart(block: DocumentBlock, param: string): OpenAIFilePart {
  if (block.source.kind === 'url') {
    throw new GatewayError(
      'unsupported_parameter',
      `OpenAI-format models read documents only inline (base64 data), not from a URL (${param} holds one).`,
      { param },
    );
  }
  const { mediaType, data } = block.source;
  const filename =
    block.title ?? `document.${mediaType === 'application/pdf' ? 'pdf' : mediaType === 'text/plain' ? 'txt' : 'bin'}`;
  return { type: 'file', file: { filename, file_data: `data:${mediaType};base64,${data}` } };
}

function textBlocks(content: ContentBlock[]): OpenAITextPart[] {
  return content.filter((block) => block.type === 'text').map((block) => ({ type: 'text', text: block.text }));
}

/** One text part is sent as a plain string, the form every OpenAI-compatible server accepts. */
function textContent(parts: ReadonlyArray<{ text: string }>): string | OpenAITextPart[] {
  if (parts.length === 1) return parts[0]!.text;
  return parts.map((part) => ({ type: 'text', text: part.text }));
}
