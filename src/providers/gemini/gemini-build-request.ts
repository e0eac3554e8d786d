import type { CanonicalRequest, ResponseFormat, ToolChoice, ToolDefinition } from '../../canonical/request.js';
import { buildGoogleSearchTool } from './gemini-grounding.js';
import { buildGeminiContents } from './gemini-build-contents.js';
import { toGeminiJsonSchema } from './gemini-json-schema.js';
import { buildThinkingConfig, geminiModelTraits } from './gemini-thinking.js';
import type {
  GeminiCountTokensRequest,
  GeminiGenerateContentRequest,
  GeminiGenerationConfig,
  GeminiTool,
  GeminiToolConfig,
} from '../../wire/gemini-generate-wire.js';
import { unsupportedPromptCacheFields } from '../prompt-cache-fields.js';

export interface BuiltGeminiRequest {
  body: GeminiGenerateContentRequest;
  /**
   * Client parameters with no Gemini slot, left out (quality-only ones; see docs/protocols/translation.md#parameters).
   */
  droppedParameters: string[];
}

/**
 * Canonical request → `GenerateContentRequest`. Messages are built by `gemini-build-contents.ts`, tool and output
 * schemas prepared by `gemini-json-schema.ts`, reasoning by `gemini-thinking.ts`; this module places the rest:
 * sampling, choices and log probabilities into `generationConfig`, tools, tool choice and
 * the response format. Neither client protocol is Gemini's, so every extension field is dropped and reported.
 */
export function buildGeminiRequest(request: CanonicalRequest, upstreamModel: string): BuiltGeminiRequest {
  const traits = geminiModelTraits(upstreamModel);
  const built = buildGeminiContents(request, { placeholderSignatures: traits.generation >= 3 });
  const dropped = new Set(built.droppedParameters);
  const body: GeminiGenerateContentRequest = { contents: built.contents };
  if (built.systemInstruction !== undefined) body.systemInstruction = built.systemInstruction;
  const googleSearch = buildGoogleSearchTool(request, dropped);
  if (googleSearch !== undefined) body.tools = [googleSearch];

  const tools = request.tools ?? [];
  if (tools.length > 0) {
    body.tools = [...(body.tools ?? []), buildTools(tools)];
    if (tools.some((tool) => tool.strict === true)) dropped.add('strict');
    // A tool choice without tools has nothing to choose from; Gemini would reject the config.
    if (request.toolChoice !== undefined) body.toolConfig = buildToolConfig(request.toolChoice);
  }

  const generationConfig = buildGenerationConfig(request, upstreamModel);
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;

  if (request.user !== undefined) dropped.add('user');
  if (request.safetyIdentifier !== undefined) dropped.add('safety_identifier');
  for (const field of unsupportedPromptCacheFields(request)) dropped.add(field);
  // Gemini may call several functions in one step and has no switch to stop it.
  if (request.parallelToolCalls !== undefined) dropped.add('parallel_tool_calls');
  if (request.extensionsProtocol === 'gemini-generate')
    for (const field of forwardGeminiExtensions(request.extensions, body)) dropped.add(field);
  else for (const field of Object.keys(request.extensions)) dropped.add(field);
  return { body, droppedParameters: [...dropped] };
}

/** The body of `:countTokens`: the prompt side of the same request, so system text and tools are counted too. */
export function buildGeminiCountTokensRequest(
  request: CanonicalRequest,
  upstreamModel: string,
): GeminiCountTokensRequest {
  const { contents, systemInstruction, tools, toolConfig } = buildGeminiRequest(request, upstreamModel).body;
  return {
    generateContentRequest: {
      model: `models/${upstreamModel}`,
      contents,
      ...(systemInstruction === undefined ? {} : { systemInstruction }),
      ...(tools === undefined ? {} : { tools }),
      ...(toolConfig === undefined ? {} : { toolConfig }),
    },
  };
}

/**
 * Top-level fields of Gemini's `GenerateContentRequest` with no canonical slot. Any other top-level field (Vertex
 * AI's `labels`, a typo) would be Gemini's 400 for the whole request: it is dropped and reported instead.
 */
const GEMINI_REQUEST_FIELDS: ReadonlySet<string> = new Set(['safetySettings', 'serviceTier']);

/**
 * A Gemini client's own fields with no canonical slot (`safetySettings`, `generationConfig.mediaResolution`, …) go to
 * Gemini as the client wrote them: it is the same API. Returns the top-level fields Gemini does not know, left out.
 */
function forwardGeminiExtensions(
  extensions: Readonly<Record<string, unknown>>,
  body: GeminiGenerateContentRequest,
): string[] {
  const GENERATION_CONFIG = 'generationConfig.';
  const unknown: string[] = [];
  for (const [field, value] of Object.entries(extensions)) {
    if (field.startsWith(GENERATION_CONFIG)) {
      body.generationConfig = { ...body.generationConfig, [field.slice(GENERATION_CONFIG.length)]: value };
    } else if (GEMINI_REQUEST_FIELDS.has(field)) {
      (body as unknown as Record<string, unknown>)[field] = value;
    } else unknown.push(field);
  }
  return unknown;
}

function buildTools(tools: readonly ToolDefinition[]): GeminiTool {
  return {
    functionDeclarations: tools.map((tool) => ({
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      // A tool without a schema takes no arguments: Gemini wants the field left out then.
      ...(tool.parameters === undefined ? {} : { parametersJsonSchema: toGeminiJsonSchema(tool.parameters) }),
    })),
  };
}

function buildToolConfig(choice: ToolChoice): GeminiToolConfig {
  switch (choice.type) {
    case 'auto':
      return { functionCallingConfig: { mode: choice.validated === true ? 'VALIDATED' : 'AUTO' } };
    case 'none':
      return { functionCallingConfig: { mode: 'NONE' } };
    case 'required':
      return { functionCallingConfig: { mode: 'ANY' } };
    case 'tool':
      return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
  }
}

function buildGenerationConfig(request: CanonicalRequest, upstreamModel: string): GeminiGenerationConfig {
  const { sampling } = request;
  const config: GeminiGenerationConfig = {};
  if (sampling.temperature !== undefined) config.temperature = sampling.temperature;
  if (sampling.topP !== undefined) config.topP = sampling.topP;
  if (sampling.topK !== undefined) config.topK = sampling.topK;
  if (sampling.stop !== undefined && sampling.stop.length > 0) config.stopSequences = sampling.stop;
  if (sampling.seed !== undefined) config.seed = sampling.seed;
  if (sampling.presencePenalty !== undefined) config.presencePenalty = sampling.presencePenalty;
  if (sampling.frequencyPenalty !== undefined) config.frequencyPenalty = sampling.frequencyPenalty;
  if (request.maxOutputTokens !== undefined) config.maxOutputTokens = request.maxOutputTokens;
  if (request.responseFormat !== undefined) Object.assign(config, buildResponseFormat(request.responseFormat));
  const thinkingConfig = buildThinkingConfig(request.reasoning, upstreamModel);
  if (thinkingConfig !== undefined) config.thinkingConfig = thinkingConfig;
  if (request.choices !== undefined) config.candidateCount = request.choices.count;
  if (request.logprobs !== undefined) {
    config.responseLogprobs = true;
    if (request.logprobs.topCandidates > 0) config.logprobs = request.logprobs.topCandidates;
  }
  return config;
}

/**
 * JSON mode is `responseMimeType`; a JSON schema goes to `responseJsonSchema` as written (keys keep their order, so
 * the model writes them in the schema's order). Gemini always constrains to the schema, so `strict` needs no slot.
 */
function buildResponseFormat(
  format: ResponseFormat,
): Pick<GeminiGenerationConfig, 'responseMimeType' | 'responseJsonSchema'> {
  if (format.type === 'text') return {};
  const schema = format.type === 'json_schema' && format.schema !== undefined ? toGeminiJsonSchema(format.schema) : {};
  // An empty schema constrains nothing beyond JSON itself: JSON mode says the same.
  return Object.keys(schema).length === 0
    ? { responseMimeType: 'application/json' }
    : { responseMimeType: 'application/json', responseJsonSchema: schema };
}
