import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  LogprobsRequest,
  ResponseFormat,
  SamplingParameters,
  TextBlock,
} from '../../canonical/request.js';
import { randomHex } from '../../ids/random-hex.js';
import { documentSourceFromFileData, imageSourceFromUrl } from '../shared/data-url.js';
import { validationError } from '../shared/format-validation-error.js';
import { applyFallbackModels } from '../shared/fallback-models-field.js';
import { decodePromptCacheFields } from '../shared/prompt-cache-fields.js';
import { MAX_MESSAGES, TOO_MANY_MESSAGES } from '../shared/request-limits.js';
import { decodeReasoningBlob } from './responses-reasoning-blob.js';
import {
  decodeToolChoice,
  decodeTools,
  flatToolName,
  headerSafeName,
  nestedValidationError,
  type NamespacedToolName,
} from './responses-decode-tools.js';
import {
  HANDLED_FIELDS,
  INPUT_ITEM_SCHEMAS,
  MAX_METADATA_PAIRS,
  responsesRequestSchema,
  type ResponsesContentPart,
  type ResponsesInputItem,
  type ResponsesRequestBody,
} from './responses-schema.js';

/** What the Responses protocol does around the canonical request: storage, reasoning visibility, echoed fields. */
export interface ResponsesOptions {
  /** `store` (default true): keep the response for `previous_response_id` and `GET /v1/responses/{id}`. */
  store: boolean;
  /** `include` has `reasoning.encrypted_content`: reasoning items carry the replayable blob. */
  includeEncryptedReasoning: boolean;
  /** `reasoning.summary` was asked for: reasoning text is shown as the item's summary. */
  showReasoningSummary: boolean;
  /** Names of the request's `custom` tools: their calls come back as `custom_tool_call` items. */
  customTools: ReadonlySet<string>;
  /** Namespaced tools by the flat name vendors call them by: their calls come back as `{ namespace, name }`. */
  namespacedTools: ReadonlyMap<string, NamespacedToolName>;
  previousResponseId: string | null;
  /** Request fields the response object repeats (docs/protocols/wire-openai-responses.md#response-object). */
  echo: ResponseEcho;
}

export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  prompt_cache_retention: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: { format: unknown; verbosity?: string };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  truncation: string;
  user: string | null;
}

export interface DecodedResponsesRequest {
  request: CanonicalRequest;
  options: ResponsesOptions;
  /** This request's own input items, each with an id (minted where the client sent none): what a store keeps. */
  inputItems: Array<Record<string, unknown>>;
  /** Request fields no vendor receives, for `x-tollgate-dropped-params` (the adapters add their own). */
  droppedParameters: string[];
}

/** The validated body, before the previous response (if any) is loaded. */
export type ParsedResponsesRequest = ResponsesRequestBody;

/** Step one: the body's shape, or a 400 naming the field. Cheap, and done before anything is looked up. */
export function parseResponsesRequest(body: unknown): ParsedResponsesRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object.');
  }
  const parsed = responsesRequestSchema.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error);
  const input = parsed.data;
  if (input.input === undefined)
    throw invalidRequest("Invalid value for 'input': this field is required (a string or an array of items).", 'input');
  if (input.metadata != null && Object.keys(input.metadata).length > MAX_METADATA_PAIRS) {
    throw invalidRequest(`Invalid value for 'metadata': may hold at most ${MAX_METADATA_PAIRS} pairs.`, 'metadata');
  }
  if (input.background === true) {
    throw new GatewayError(
      'unsupported_parameter',
      "'background' responses are not supported by this gateway: send the request without it.",
      { param: 'background' },
    );
  }
  if (input.conversation !== undefined && input.conversation !== null) {
    throw new GatewayError(
      'unsupported_parameter',
      "'conversation' is not supported by this gateway: use 'previous_response_id' or send the whole input.",
      { param: 'conversation' },
    );
  }
  return input;
}

const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

/**
 * Log probabilities: asked for with `include: ["message.output_text.logprobs"]` or `top_logprobs` above 0. Served
 * where the model's vendor gives them; refused by the pipeline, naming the field that asked, where it does not.
 */
function decodeLogprobs(input: ParsedResponsesRequest): LogprobsRequest | undefined {
  const top = input.top_logprobs ?? 0;
  const included = (input.include ?? []).indexOf(LOGPROBS_INCLUDE);
  if (included >= 0) return { topCandidates: top, param: `include[${included}]` };
  return top > 0 ? { topCandidates: top, param: 'top_logprobs' } : undefined;
}

/**
 * Step two: the canonical request. `history` is the stored conversation `previous_response_id` names (its input and
 * output items), decoded ahead of this request's input; its `instructions` are not carried over (OpenAI's rule).
 */
export function decodeResponsesRequest(
  input: ParsedResponsesRequest,
  history: ReadonlyArray<Record<string, unknown>> = [],
): DecodedResponsesRequest {
  const dropped: string[] = [];
  const ownItems = normaliseItems(input.input!);
  const items = [...history, ...ownItems];
  if (items.length > MAX_MESSAGES)
    throw invalidRequest(`Invalid value for 'input': with the previous response it ${TOO_MANY_MESSAGES}.`, 'input');
  const validated = items.map((item, index) =>
    validateItem(
      item,
      index < history.length ? `previous_response_id` : `input[${index - history.length}]`,
      index < history.length,
    ),
  );
  const { tools, toolNames, customTools, namespacedTools, serverTools } = decodeTools(input, dropped);
  const system: TextBlock[] = input.instructions ? [{ type: 'text', text: input.instructions }] : [];
  const messages = decodeItems(validated, system, history.length);

  const request: CanonicalRequest = {
    model: input.model === undefined || input.model === null ? '' : String(input.model),
    system,
    messages,
    sampling: samplingOf(input),
    stream: input.stream === true,
    extensions: {},
    extensionsProtocol: 'openai-responses',
  };
  if (input.max_output_tokens != null) request.maxOutputTokens = input.max_output_tokens;
  if (tools.length > 0) request.tools = tools;
  if (serverTools.length > 0) request.serverTools = serverTools;
  const toolChoice = decodeToolChoice(input.tool_choice, toolNames, request);
  if (toolChoice !== undefined) request.toolChoice = toolChoice;
  if (input.parallel_tool_calls != null) request.parallelToolCalls = input.parallel_tool_calls;
  const format = input.text?.format;
  if (format != null && format.type !== 'text') request.responseFormat = decodeFormat(format);
  if (input.reasoning?.effort != null) request.reasoning = { effort: input.reasoning.effort };
  if (input.user != null) request.user = input.user;
  if (input.safety_identifier != null) request.safetyIdentifier = input.safety_identifier;
  const logprobs = decodeLogprobs(input);
  if (logprobs !== undefined) request.logprobs = logprobs;
  decodePromptCacheFields(input, request);
  applyFallbackModels(request, input.models);

  for (const [field, value] of Object.entries(input)) {
    if (!HANDLED_FIELDS.has(field) && value !== undefined && value !== null) dropped.push(headerSafeName(field));
  }
  if (input.text?.verbosity != null) dropped.push('text.verbosity');
  if (input.truncation === 'auto') dropped.push('truncation');
  for (const value of input.include ?? [])
    if (value !== 'reasoning.encrypted_content' && value !== LOGPROBS_INCLUDE)
      dropped.push(headerSafeName(`include.${value}`));

  const summary = input.reasoning?.summary ?? input.reasoning?.generate_summary ?? null;
  const store = input.store !== false;
  return {
    request,
    options: {
      store,
      includeEncryptedReasoning: (input.include ?? []).includes('reasoning.encrypted_content'),
      showReasoningSummary: summary !== null,
      customTools,
      namespacedTools,
      previousResponseId: input.previous_response_id ?? null,
      echo: {
        instructions: input.instructions ?? null,
        max_output_tokens: input.max_output_tokens ?? null,
        metadata: input.metadata ?? {},
        parallel_tool_calls: input.parallel_tool_calls ?? true,
        previous_response_id: input.previous_response_id ?? null,
        prompt_cache_key: input.prompt_cache_key ?? null,
        prompt_cache_retention: input.prompt_cache_retention ?? null,
        reasoning: { effort: input.reasoning?.effort ?? null, summary },
        store,
        temperature: input.temperature ?? null,
        text: {
          format: format ?? { type: 'text' },
          ...(input.text?.verbosity == null ? {} : { verbosity: input.text.verbosity }),
        },
        tool_choice: input.tool_choice ?? 'auto',
        tools: input.tools ?? [],
        top_p: input.top_p ?? null,
        truncation: input.truncation ?? 'disabled',
        user: input.user ?? null,
      },
    },
    inputItems: ownItems,
    droppedParameters: [...new Set(dropped)],
  };
}

/** `input` as items: a string is one user message; every item gets an id so `input_items` can page by it. */
function normaliseItems(input: string | unknown[]): Array<Record<string, unknown>> {
  if (typeof input === 'string')
    return [{ type: 'message', id: mintId('msg'), role: 'user', content: [{ type: 'input_text', text: input }] }];
  return input.map((item) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      return { value: item } as Record<string, unknown>;
    const record = item as Record<string, unknown>;
    const type = record.type === undefined && 'role' in record ? 'message' : record.type;
    const id =
      typeof record.id === 'string' && record.id !== '' ? record.id : mintId(ID_PREFIXES[String(type)] ?? 'item');
    return { ...record, type, id };
  });
}

const ID_PREFIXES: Readonly<Record<string, string>> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
  reasoning: 'rs',
};

export function mintId(prefix: string): string {
  return `${prefix}_${randomHex(12)}`;
}

function validateItem(item: Record<string, unknown>, param: string, fromHistory: boolean): ResponsesInputItem {
  if ('value' in item && Object.keys(item).length === 1)
    throw invalidRequest(`Invalid value for '${param}': expected an item object.`, param);
  const type = item.type;
  const schema = typeof type === 'string' ? INPUT_ITEM_SCHEMAS[type as keyof typeof INPUT_ITEM_SCHEMAS] : undefined;
  if (schema === undefined) {
    throw invalidRequest(
      `Invalid value for '${param}.type': input items of type ${JSON.stringify(type)} are not supported; use message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning or web_search_call.`,
      fromHistory ? param : `${param}.type`,
    );
  }
  const parsed = schema.safeParse(item, { reportInput: true });
  if (!parsed.success) {
    if (fromHistory) throw validationError(parsed.error);
    throw nestedValidationError(parsed.error, param);
  }
  return { ...parsed.data, type } as ResponsesInputItem;
}

/**
 * Items → canonical messages. The assistant side of one turn (reasoning, message, function calls) becomes one
 * assistant message; consecutive function outputs one user message of tool results. Leading system and developer
 * messages join `instructions` in the system slot; later ones keep their place.
 */
function decodeItems(items: ResponsesInputItem[], system: TextBlock[], historyLength: number): CanonicalMessage[] {
  const messages: CanonicalMessage[] = [];
  const calls = new Set<string>();
  const paramOf = (index: number) =>
    index < historyLength ? 'previous_response_id' : `input[${index - historyLength}]`;
  const assistant = (): CanonicalMessage => {
    const last = messages[messages.length - 1];
    if (last?.role === 'assistant') return last;
    const message: CanonicalMessage = { role: 'assistant', content: [] };
    messages.push(message);
    return message;
  };
  items.forEach((item, index) => {
    const param = paramOf(index);
    switch (item.type) {
      case 'web_search_call':
        // The search ran at the vendor; what it found is in the reply's text: nothing to replay.
        return;
      case 'message': {
        if (item.role === 'system' || item.role === 'developer') {
          const content = textOf(item.content).map((text): TextBlock => ({ type: 'text', text }));
          if (messages.length === 0) system.push(...content);
          else messages.push({ role: 'system', content });
          return;
        }
        if (item.role === 'assistant') {
          const text = textOf(item.content).join('');
          if (text !== '') assistant().content.push({ type: 'text', text });
          return;
        }
        messages.push({ role: 'user', content: userContent(item.content, `${param}.content`) });
        return;
      }
      case 'reasoning': {
        const block = item.encrypted_content
          ? decodeReasoningBlob(item.encrypted_content, `${param}.encrypted_content`)
          : {
              type: 'reasoning' as const,
              text: [...item.summary.map((part) => part.text), ...(item.content ?? []).map((part) => part.text)].join(
                '\n\n',
              ),
            };
        assistant().content.push(block);
        return;
      }
      case 'function_call':
        calls.add(item.call_id);
        assistant().content.push({
          type: 'tool-call',
          id: item.call_id,
          name: vendorToolName(item),
          argumentsJson: item.arguments,
        });
        return;
      case 'custom_tool_call':
        // A custom tool travels to every vendor as a function with one string argument (see decodeTools).
        calls.add(item.call_id);
        assistant().content.push({
          type: 'tool-call',
          id: item.call_id,
          name: vendorToolName(item),
          argumentsJson: JSON.stringify({ input: item.input }),
        });
        return;
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (!calls.has(item.call_id)) {
          throw invalidRequest(
            `'${param}' is the output of call '${item.call_id}', but no earlier ${item.type === 'function_call_output' ? 'function_call' : 'custom_tool_call'} item has that call_id.`,
            index < historyLength ? param : `${param}.call_id`,
          );
        }
        const result: ContentBlock = {
          type: 'tool-result',
          toolCallId: item.call_id,
          content: toolOutput(item.output, `${param}.output`),
          isError: false,
        };
        const last = messages[messages.length - 1];
        if (last?.role === 'user' && last.content.every((block) => block.type === 'tool-result'))
          last.content.push(result);
        else messages.push({ role: 'user', content: [result] });
        return;
      }
    }
  });
  return messages;
}

/** A call item's tool as vendors know it: a namespaced one by its flat name. */
function vendorToolName(item: { name: string; namespace?: string | null | undefined }): string {
  return item.namespace == null || item.namespace === '' ? item.name : flatToolName(item.namespace, item.name);
}

function textOf(content: string | ResponsesContentPart[]): string[] {
  if (typeof content === 'string') return [content];
  return content.flatMap((part) => {
    if (part.type === 'input_text' || part.type === 'output_text') return [part.text];
    if (part.type === 'refusal') return [part.refusal];
    return [];
  });
}

function userContent(content: string | ResponsesContentPart[], param: string): ContentBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part, index) => contentBlock(part, `${param}[${index}]`));
}

function contentBlock(part: ResponsesContentPart, param: string): ContentBlock {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image': {
      if (part.image_url == null) {
        throw new GatewayError(
          'unsupported_parameter',
          `'${param}' refers to an uploaded file: send the image inline as 'image_url' (a URL or a data URL).`,
          { param: `${param}.file_id` },
        );
      }
      const image: ImageBlock = { type: 'image', source: imageSourceFromUrl(part.image_url, `${param}.image_url`) };
      if (part.detail === 'auto' || part.detail === 'low' || part.detail === 'high') image.detail = part.detail;
      return image;
    }
    case 'input_file': {
      let document: DocumentBlock;
      if (part.file_data != null) {
        document = {
          type: 'document',
          source: documentSourceFromFileData(part.file_data, part.filename, `${param}.file_data`),
        };
      } else if (part.file_url != null) {
        document = { type: 'document', source: imageSourceFromUrl(part.file_url, `${param}.file_url`) };
      } else {
        throw new GatewayError(
          'unsupported_parameter',
          `'${param}' refers to an uploaded file: send it inline as 'file_data' or 'file_url'.`,
          { param: `${param}.file_id` },
        );
      }
      if (part.filename != null) document.title = part.filename;
      return document;
    }
  }
}

function toolOutput(output: string | ResponsesContentPart[], param: string): Array<TextBlock | ImageBlock> {
  if (typeof output === 'string') return [{ type: 'text', text: output }];
  return output.map((part, index) => {
    const block = contentBlock(part, `${param}[${index}]`);
    if (block.type === 'text' || block.type === 'image') return block;
    throw new GatewayError(
      'unsupported_parameter',
      `'${param}[${index}]': a function output may hold text and images only.`,
      { param: `${param}[${index}]` },
    );
  });
}

function decodeFormat(format: NonNullable<NonNullable<ParsedResponsesRequest['text']>['format']>): ResponseFormat {
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type !== 'json_schema') return { type: 'text' };
  const result: ResponseFormat = { type: 'json_schema', name: format.name, schema: format.schema };
  if (format.description != null) result.description = format.description;
  if (format.strict != null) result.strict = format.strict;
  return result;
}

function samplingOf(input: ParsedResponsesRequest): SamplingParameters {
  const sampling: SamplingParameters = {};
  if (input.temperature != null) sampling.temperature = input.temperature;
  if (input.top_p != null) sampling.topP = input.top_p;
  return sampling;
}
