import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type { ServerToolDefinition } from '../../canonical/server-tools.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  ContentBlock,
  ImageBlock,
  ImageSource,
  MediaInput,
  ReasoningBlock,
  ReasoningParameters,
  ResponseFormat,
  TextBlock,
  ToolChoice,
  ToolDefinition,
} from '../../canonical/request.js';
import { applyFallbackModels } from '../shared/fallback-models-field.js';
import { type BodySchema, parseRequestBody } from '../shared/format-validation-error.js';
import {
  CANONICAL_FIELDS,
  CANONICAL_GENERATION_FIELDS,
  geminiCountTokensRequestSchema,
  geminiGenerateRequestSchema,
  type GeminiGenerateRequestBody,
  type GeminiRequestContent,
  type GeminiRequestGenerationConfig,
  type GeminiRequestPart,
} from './gemini-generate-schema.js';
import { openApiToJsonSchema } from './gemini-openapi-schema.js';
import { reasoningBlock, unpackReasoning } from './gemini-reasoning-carrier.js';
import { normalizeFieldNames } from './gemini-snake-case.js';

/** The model the path names, resolved: the upstream that will serve it decides what media it can be given. */
export interface GeminiTarget {
  /** The public model id. */
  model: string;
  media: MediaInput;
}

export interface DecodedGeminiRequest {
  request: CanonicalRequest;
  /** `thinkingConfig.includeThoughts`: whether the reply shows thought text (signatures travel either way). */
  includeThoughts: boolean;
}

/** A `GenerateContentRequest` → the canonical request, or a 400 naming the field at fault (Google's own rules). */
export function decodeGeminiGenerateRequest(
  body: unknown,
  target: GeminiTarget,
  stream: boolean,
): DecodedGeminiRequest {
  const input = parseBody(body, geminiGenerateRequestSchema);
  const request = decodePrompt(input, target);
  request.stream = stream;
  applyFallbackModels(request, input.models, { googleNames: true });
  const config = input.generationConfig;
  if (config !== undefined) applyGenerationConfig(request, config);
  return { request, includeThoughts: config?.thinkingConfig?.includeThoughts === true };
}

/** A `CountTokensRequest`: `contents` alone, or a whole `generateContentRequest`. */
export function decodeGeminiCountTokensRequest(body: unknown, target: GeminiTarget): CanonicalRequest {
  const input = parseBody(body, geminiCountTokensRequestSchema);
  const inner = input.generateContentRequest;
  if (inner !== undefined) {
    if (input.contents !== undefined)
      throw invalidRequest("Send either 'contents' or 'generateContentRequest', not both.", 'contents');
    return decodePrompt(inner, target, 'generateContentRequest.');
  }
  if (input.contents === undefined)
    throw invalidRequest("Invalid value for 'contents': this field is required (expected array).", 'contents');
  return decodePrompt({ contents: input.contents }, target);
}

/** Gemini takes its field names in camelCase or snake_case, as Google's API does. */
function parseBody<T>(body: unknown, schema: BodySchema<T>): T {
  return parseRequestBody(body, schema, normalizeFieldNames);
}

type PromptInput = Pick<GeminiGenerateRequestBody, 'contents' | 'systemInstruction' | 'tools' | 'toolConfig'> &
  Record<string, unknown>;

function decodePrompt(input: PromptInput, target: GeminiTarget, prefix = ''): CanonicalRequest {
  const extensions: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    if (CANONICAL_FIELDS.has(field) || value === undefined || value === null) continue;
    // A cached prompt lives in the caller's Google project: no vendor behind the gateway can read it.
    if (field === 'cachedContent')
      throw new GatewayError(
        'unsupported_parameter',
        "'cachedContent' names a prompt cached in a Google project, which this gateway cannot read: send the contents instead.",
        { param: 'cachedContent' },
      );
    extensions[field] = value;
  }
  const request: CanonicalRequest = {
    model: target.model,
    system: decodeSystem(input.systemInstruction, `${prefix}systemInstruction`),
    messages: decodeContents(input.contents, target.media, `${prefix}contents`),
    sampling: {},
    stream: false,
    extensions,
    extensionsProtocol: 'gemini-generate',
  };
  const serverTools: ServerToolDefinition[] = [];
  const tools = decodeTools(input.tools, `${prefix}tools`, serverTools);
  if (tools.length > 0) request.tools = tools;
  if (serverTools.length > 0) request.serverTools = serverTools;
  const functionCalling = input.toolConfig?.functionCallingConfig;
  if (functionCalling !== undefined && tools.length > 0) {
    const choice = decodeToolChoice(
      functionCalling.mode,
      functionCalling.allowedFunctionNames,
      request,
      `${prefix}toolConfig.functionCallingConfig`,
    );
    if (choice !== undefined) request.toolChoice = choice;
  }
  return request;
}

function decodeSystem(system: PromptInput['systemInstruction'], param: string): TextBlock[] {
  if (system === undefined) return [];
  return system.parts.flatMap((part, index): TextBlock[] => {
    if (dataFields(part).some((field) => field !== 'text')) {
      throw invalidRequest(
        `'${param}.parts[${index}]' must be a text part: a system instruction holds text only.`,
        `${param}.parts[${index}]`,
      );
    }
    return part.text === undefined || part.text === '' ? [] : [{ type: 'text', text: part.text }];
  });
}

const DATA_FIELDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
] as const;

/** The data fields a part sets; Google requires exactly one (thought and thoughtSignature ride beside it). */
function dataFields(part: GeminiRequestPart): string[] {
  return DATA_FIELDS.filter((field) => part[field] !== undefined && part[field] !== null);
}

interface OpenCall {
  id: string;
  name: string;
  answered: boolean;
}

/**
 * `contents` → canonical messages, with Google's function-calling rules checked: every `functionResponse` answers a
 * `functionCall` of the model content just before it (by `id`, else by name in call order), and a content that
 * answers calls answers all of them, as the real API requires.
 */
function decodeContents(contents: GeminiRequestContent[], media: MediaInput, param: string): CanonicalMessage[] {
  const messages: CanonicalMessage[] = [];
  let openCalls: OpenCall[] = [];
  for (const turn of turnsOf(contents, param)) {
    const where = turn.where;
    if (turn.role === 'model') {
      if (openCalls.some((call) => !call.answered)) throw unansweredCalls(openCalls, where);
      const { blocks, calls } = decodeModelParts(turn.parts);
      openCalls = calls;
      if (blocks.length > 0) messages.push({ role: 'assistant', content: blocks });
      continue;
    }
    if (turn.role !== 'user' && turn.role !== 'function') {
      throw invalidRequest(
        `Invalid value for '${where}.role': must be "user" or "model", got ${JSON.stringify(turn.role)}.`,
        `${where}.role`,
      );
    }
    const blocks: ContentBlock[] = [];
    let answered = false;
    turn.parts.forEach(({ part, param: partParam }) => {
      if (part.functionResponse !== undefined) {
        answered = true;
        blocks.push(decodeFunctionResponse(part.functionResponse, openCalls, media, partParam));
        return;
      }
      const block = decodeUserPart(part, media, partParam);
      if (block !== undefined) blocks.push(block);
    });
    if (answered && openCalls.some((call) => !call.answered)) throw unansweredCalls(openCalls, where);
    openCalls = answered ? [] : openCalls;
    if (blocks.length > 0) messages.push({ role: 'user', content: blocks });
  }
  if (messages.length === 0) throw invalidRequest(`'${param}' holds no text, media or function parts.`, param);
  return messages;
}

interface Turn {
  role: string;
  /** The first content of the turn, for error messages. */
  where: string;
  parts: Array<{ part: GeminiRequestPart; param: string }>;
}

/**
 * Contents as turns: consecutive model contents are one turn. @google/genai's chat keeps a streamed reply as one
 * model content per chunk, so its thoughts, text and calls arrive spread over several contents; Google reads
 * them as one reply, and so does the gateway (a thought's pieces join up again, a call is answered once).
 */
function turnsOf(contents: GeminiRequestContent[], param: string): Turn[] {
  const turns: Turn[] = [];
  contents.forEach((content, contentIndex) => {
    const where = `${param}[${contentIndex}]`;
    const role = content.role ?? 'user';
    const parts = content.parts.map((part, partIndex) => {
      const partParam = `${where}.parts[${partIndex}]`;
      checkPart(part, partParam);
      return { part, param: partParam };
    });
    const previous = turns[turns.length - 1];
    if (role === 'model' && previous?.role === 'model') previous.parts.push(...parts);
    else turns.push({ role, where, parts });
  });
  return turns;
}

function checkPart(part: GeminiRequestPart, param: string): void {
  const fields = dataFields(part);
  if (fields.length === 0 && part.thoughtSignature === undefined) {
    throw invalidRequest(
      `'${param}' must set one data field (text, inlineData, fileData, functionCall or functionResponse).`,
      param,
    );
  }
  if (fields.length > 1)
    throw invalidRequest(`'${param}' sets ${fields.join(' and ')}: a part holds exactly one data field.`, param);
  const field = fields[0];
  if (field === 'executableCode' || field === 'codeExecutionResult') {
    throw new GatewayError(
      'unsupported_parameter',
      `'${param}.${field}': code execution is not available through this gateway.`,
      { param: `${param}.${field}` },
    );
  }
}

function unansweredCalls(calls: OpenCall[], where: string): GatewayError {
  const names = calls.filter((call) => !call.answered).map((call) => call.name);
  return invalidRequest(
    `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn: '${names.join("', '")}' got no functionResponse before ${where}.`,
    where,
  );
}

/**
 * A model content. Its thought parts are reasoning (consecutive ones are one thought); when the first function call
 * carries the reply's reasoning (gemini-reasoning-carrier.ts), that reasoning is used and the thought parts, the
 * same reasoning, are not read twice. A call without an id gets one that names its place.
 */
function decodeModelParts(parts: Turn['parts']): { blocks: ContentBlock[]; calls: OpenCall[] } {
  const carried = unpackReasoning(parts.find(({ part }) => part.functionCall !== undefined)?.part.thoughtSignature);
  const blocks: ContentBlock[] = carried === undefined ? [] : [...carried];
  const calls: OpenCall[] = [];
  let thought: ReasoningBlock | undefined;
  parts.forEach(({ part, param }) => {
    if (part.thought === true && part.functionCall === undefined) {
      if (carried !== undefined) return;
      const next = reasoningBlock(part.text ?? '', part.thoughtSignature);
      if (
        thought !== undefined &&
        thought.signature === undefined &&
        (thought.originVendor === undefined || thought.originVendor === next.originVendor)
      ) {
        thought.text += next.text;
        if (next.signature !== undefined) thought.signature = next.signature;
        if (next.originVendor !== undefined) thought.originVendor = next.originVendor;
        return;
      }
      thought = next;
      blocks.push(thought);
      return;
    }
    thought = undefined;
    if (part.functionCall !== undefined) {
      const call = part.functionCall;
      const id =
        call.id !== undefined && call.id !== null && call.id !== ''
          ? call.id
          : `gemini_call${param.replace(/\D+/g, '_').replace(/_$/, '')}`;
      calls.push({ id, name: call.name, answered: false });
      blocks.push({ type: 'tool-call', id, name: call.name, argumentsJson: JSON.stringify(call.args ?? {}) });
      return;
    }
    if (part.text !== undefined) {
      if (part.text !== '') blocks.push({ type: 'text', text: part.text });
      return;
    }
    if (part.inlineData !== undefined || part.fileData !== undefined) {
      throw invalidRequest(`'${param}': a model content holds text, thoughts and function calls only.`, param);
    }
    if (part.functionResponse !== undefined) {
      throw invalidRequest(`'${param}': a functionResponse belongs in a user content.`, param);
    }
  });
  return { blocks, calls };
}

function decodeUserPart(part: GeminiRequestPart, media: MediaInput, param: string): ContentBlock | undefined {
  if (part.thought === true) return undefined;
  if (part.functionCall !== undefined)
    throw invalidRequest(`'${param}': a functionCall belongs in a model content.`, param);
  if (part.text !== undefined) return part.text === '' ? undefined : { type: 'text', text: part.text };
  if (part.inlineData !== undefined)
    return mediaBlock(
      part.inlineData.mimeType,
      { kind: 'base64', mediaType: part.inlineData.mimeType.toLowerCase(), data: part.inlineData.data },
      media,
      `${param}.inlineData`,
    );
  if (part.fileData !== undefined)
    return fileBlock(part.fileData.fileUri, part.fileData.mimeType, media, `${param}.fileData`);
  return undefined;
}

/** The Files API and Cloud Storage keep files in the caller's Google project: nothing behind the gateway can read them. */
const GOOGLE_FILE_URI = /^(?:gs:\/\/|https:\/\/generativelanguage\.googleapis\.com\/)/i;

function fileBlock(uri: string, mimeType: string | undefined, media: MediaInput, param: string): ContentBlock {
  if (GOOGLE_FILE_URI.test(uri) || !/^https?:\/\//i.test(uri)) {
    throw new GatewayError(
      'unsupported_parameter',
      `'${param}.fileUri' (${uri.slice(0, 100)}) is not reachable through this gateway: send the file as inlineData, or give a public http(s) URL.`,
      { param: `${param}.fileUri` },
    );
  }
  const type = (mimeType ?? '').toLowerCase();
  if (type.startsWith('image/') && media.imageUrls) return { type: 'image', source: { kind: 'url', url: uri } };
  if (type === 'application/pdf' && media.pdfUrls) return { type: 'document', source: { kind: 'url', url: uri } };
  if (media.otherTypes && type !== '') return { type: 'document', source: { kind: 'url', url: uri } };
  throw new GatewayError(
    'unsupported_parameter',
    `'${param}': a ${type === '' ? 'file without mimeType' : type} URL cannot be fetched by the model this request names.`,
    { param },
  );
}

function mediaBlock(mimeType: string, source: ImageSource, media: MediaInput, param: string): ContentBlock {
  const type = mimeType.toLowerCase();
  if (source.kind === 'base64' && source.data === '')
    throw invalidRequest(`'${param}.data' is empty.`, `${param}.data`);
  if (type.startsWith('image/')) return { type: 'image', source };
  if (type === 'application/pdf' && media.inlinePdfs) return { type: 'document', source };
  if (type.startsWith('text/') && source.kind === 'base64')
    return { type: 'text', text: Buffer.from(source.data, 'base64').toString('utf8') };
  if (media.otherTypes) return { type: 'document', source };
  throw new GatewayError(
    'unsupported_parameter',
    `'${param}' holds ${type}, which the model this request names cannot read.`,
    { param: `${param}.mimeType` },
  );
}

function decodeFunctionResponse(
  response: NonNullable<GeminiRequestPart['functionResponse']>,
  openCalls: OpenCall[],
  media: MediaInput,
  param: string,
): ContentBlock {
  const byId =
    response.id !== undefined && response.id !== null && response.id !== ''
      ? openCalls.find((call) => !call.answered && call.id === response.id)
      : undefined;
  const call = byId ?? openCalls.find((call) => !call.answered && call.name === response.name);
  if (call === undefined) {
    throw invalidRequest(
      `'${param}.functionResponse' (${response.name}) answers no functionCall of the model content just before it: each functionResponse must follow the model content that made the call, once.`,
      `${param}.functionResponse`,
    );
  }
  call.answered = true;
  const value = response.response ?? {};
  const keys = Object.keys(value);
  const isError = keys.length === 1 && keys[0] === 'error';
  const only = keys.length === 1 ? value[keys[0]!] : undefined;
  const text =
    keys.length === 1 && (keys[0] === 'output' || isError) && typeof only === 'string' ? only : JSON.stringify(value);
  const content: Array<TextBlock | ImageBlock> = [{ type: 'text', text }];
  (response.parts ?? []).forEach((inner, index) => {
    const data = inner.inlineData;
    if (data === undefined) return;
    const block = mediaBlock(
      data.mimeType,
      { kind: 'base64', mediaType: data.mimeType.toLowerCase(), data: data.data },
      media,
      `${param}.functionResponse.parts[${index}].inlineData`,
    );
    if (block.type !== 'image')
      throw new GatewayError(
        'unsupported_parameter',
        `'${param}.functionResponse.parts[${index}]': only images can be part of a function response.`,
        { param: `${param}.functionResponse.parts[${index}]` },
      );
    content.push(block);
  });
  return { type: 'tool-result', toolCallId: call.id, content, isError };
}

/** Function declarations → tools; Google Search → a web search, which every family with one can run. */
function decodeTools(
  tools: PromptInput['tools'],
  param: string,
  serverTools: ServerToolDefinition[],
): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  (tools ?? []).forEach((tool, index) => {
    for (const [field, value] of Object.entries(tool)) {
      if (field === 'functionDeclarations' || value === undefined || value === null) continue;
      if (field === 'googleSearch') {
        serverTools.push({ kind: 'web-search', label: 'googleSearch', param: `${param}[${index}].googleSearch` });
        continue;
      }
      // Google's other built-in tools run inside Google: no vendor behind the gateway has them, and dropping one
      // would change what the model can do.
      throw new GatewayError(
        'unsupported_parameter',
        `'${param}[${index}].${field}': built-in Google tools are not available through this gateway; declare functions instead.`,
        { param: `${param}[${index}].${field}` },
      );
    }
    for (const declaration of tool.functionDeclarations ?? []) {
      const schema =
        declaration.parametersJsonSchema !== undefined && declaration.parametersJsonSchema !== null
          ? declaration.parametersJsonSchema
          : declaration.parameters === undefined
            ? undefined
            : openApiToJsonSchema(declaration.parameters);
      if (schema !== undefined && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
        throw invalidRequest(
          `'${param}[${index}].functionDeclarations' (${declaration.name}): the parameters schema must be an object.`,
          `${param}[${index}].functionDeclarations`,
        );
      }
      out.push({
        name: declaration.name,
        ...(declaration.description === undefined ? {} : { description: declaration.description }),
        ...(schema === undefined ? {} : { parameters: schema as Record<string, unknown> }),
      });
    }
  });
  return out;
}

/**
 * `functionCallingConfig` → tool choice. ANY or VALIDATED with allowed names keeps only those tools (exactly what
 * Google means: the model may call no other); with ANY one allowed name is that tool. VALIDATED lets the model
 * choose, like AUTO, and is kept so that Gemini gets it back (other vendors get their `auto`).
 */
function decodeToolChoice(
  mode: string | undefined,
  allowed: string[] | undefined,
  request: CanonicalRequest,
  param: string,
): ToolChoice | undefined {
  if (mode === 'NONE') return { type: 'none' };
  const validated = mode === 'VALIDATED';
  if (mode !== 'ANY' && !validated)
    return mode === undefined || mode === 'MODE_UNSPECIFIED' ? undefined : { type: 'auto' };
  if (allowed !== undefined && allowed.length > 0) {
    const known = new Set((request.tools ?? []).map((tool) => tool.name));
    const unknown = allowed.find((name) => !known.has(name));
    if (unknown !== undefined)
      throw invalidRequest(
        `'${param}.allowedFunctionNames' names '${unknown}', which no function declaration has.`,
        `${param}.allowedFunctionNames`,
      );
    // Only those tools are offered: the model may call no other.
    request.tools = (request.tools ?? []).filter((tool) => allowed.includes(tool.name));
    if (!validated && allowed.length === 1) return { type: 'tool', name: allowed[0]! };
  }
  return validated ? { type: 'auto', validated: true } : { type: 'required' };
}

function applyGenerationConfig(request: CanonicalRequest, config: GeminiRequestGenerationConfig): void {
  const param = 'generationConfig';
  // Served where the model's vendor can give them, refused by the pipeline (naming these fields) where it cannot.
  if (config.candidateCount !== undefined && config.candidateCount > 1)
    request.choices = { count: config.candidateCount, param: `${param}.candidateCount` };
  if (config.responseLogprobs === true)
    request.logprobs = { topCandidates: config.logprobs ?? 0, param: `${param}.responseLogprobs` };
  else if (config.logprobs !== undefined)
    throw invalidRequest(`'${param}.logprobs' requires '${param}.responseLogprobs' to be true.`, `${param}.logprobs`);
  const modalities = config.responseModalities?.filter((modality) => modality.toUpperCase() !== 'TEXT') ?? [];
  if (modalities.length > 0) {
    throw new GatewayError(
      'unsupported_parameter',
      `'${param}.responseModalities': only TEXT replies are available through this gateway.`,
      { param: `${param}.responseModalities` },
    );
  }
  const sampling = request.sampling;
  if (config.temperature !== undefined) sampling.temperature = config.temperature;
  if (config.topP !== undefined) sampling.topP = config.topP;
  if (config.topK !== undefined) sampling.topK = config.topK;
  if (config.seed !== undefined) sampling.seed = config.seed;
  if (config.presencePenalty !== undefined) sampling.presencePenalty = config.presencePenalty;
  if (config.frequencyPenalty !== undefined) sampling.frequencyPenalty = config.frequencyPenalty;
  const stop = config.stopSequences?.filter((sequence) => sequence !== '') ?? [];
  if (stop.length > 0) sampling.stop = stop;
  if (config.maxOutputTokens !== undefined) request.maxOutputTokens = config.maxOutputTokens;
  const format = decodeResponseFormat(config, param);
  if (format !== undefined) request.responseFormat = format;
  const reasoning = decodeThinking(config.thinkingConfig);
  if (reasoning !== undefined) request.reasoning = reasoning;
  // Members with no canonical slot (mediaResolution, speechConfig left aside above…): dropped and reported.
  for (const [field, value] of Object.entries(config)) {
    if (!CANONICAL_GENERATION_FIELDS.has(field) && value !== undefined && value !== null)
      request.extensions[`${param}.${field}`] = value;
  }
}

function decodeResponseFormat(config: GeminiRequestGenerationConfig, param: string): ResponseFormat | undefined {
  const mime = config.responseMimeType?.toLowerCase();
  const jsonSchema = config.responseJsonSchema ?? undefined;
  const schema = config.responseSchema;
  if (jsonSchema !== undefined && schema !== undefined) {
    throw invalidRequest(`'${param}': set responseJsonSchema or responseSchema, not both.`, `${param}.responseSchema`);
  }
  if (mime === undefined || mime === '' || mime === 'text/plain') {
    if (jsonSchema !== undefined || schema !== undefined) {
      throw invalidRequest(
        `'${param}.responseMimeType' must be application/json when a response schema is given.`,
        `${param}.responseMimeType`,
      );
    }
    return undefined;
  }
  if (mime !== 'application/json') {
    throw new GatewayError(
      'unsupported_parameter',
      `'${param}.responseMimeType' ${config.responseMimeType} is not supported: use text/plain or application/json.`,
      { param: `${param}.responseMimeType` },
    );
  }
  if (jsonSchema !== undefined) {
    if (jsonSchema === null || typeof jsonSchema !== 'object' || Array.isArray(jsonSchema))
      throw invalidRequest(
        `'${param}.responseJsonSchema' must be a JSON Schema object.`,
        `${param}.responseJsonSchema`,
      );
    return { type: 'json_schema', name: 'response', schema: jsonSchema as Record<string, unknown> };
  }
  if (schema !== undefined) return { type: 'json_schema', name: 'response', schema: openApiToJsonSchema(schema) };
  return { type: 'json_object' };
}

/**
 * `thinkingConfig` → canonical reasoning: a budget is Anthropic's `budget_tokens` (0 off, -1 the model's own amount),
 * a level is an effort. `includeThoughts` alone asks for thinking at the model's own amount.
 */
function decodeThinking(config: GeminiRequestGenerationConfig['thinkingConfig']): ReasoningParameters | undefined {
  if (config === undefined) return undefined;
  const reasoning: ReasoningParameters = {};
  const budget = config.thinkingBudget;
  if (budget === 0) return { enabled: false };
  if (budget !== undefined && budget > 0) {
    reasoning.enabled = true;
    reasoning.budgetTokens = budget;
  } else if (budget === -1) {
    reasoning.enabled = true;
  }
  const level = config.thinkingLevel;
  if (level !== undefined && level !== 'THINKING_LEVEL_UNSPECIFIED') {
    reasoning.enabled = true;
    reasoning.effort = level.toLowerCase();
  }
  if (config.includeThoughts === true) reasoning.enabled = true;
  if (reasoning.enabled !== true) return undefined;
  if (config.includeThoughts !== true) reasoning.display = 'omitted';
  return reasoning;
}
