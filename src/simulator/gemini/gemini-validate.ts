/**
 * Request validation the way the Gemini API does it: proto3 JSON parsing (`gemini-request-shape.ts`), the
 * contents rules (`gemini-validate-contents.ts`), tools (`gemini-validate-tools.ts`), and here the
 * generation config: value ranges, stop-sequence and candidate limits, response MIME types, and the
 * thinking settings each model accepts (`gemini-models.ts`).
 */
import { isGemini3, thinkingFor } from './gemini-models.js';
import { GeminiInvalid, normalizeCountTokensRequest, normalizeGeminiRequest } from './gemini-request-shape.js';
import type { GeminiGenerationConfig, GeminiRequest, GeminiThinking } from './gemini-types.js';
import { checkContents, checkSystemInstruction } from './gemini-validate-contents.js';
import { checkJsonSchema, checkTools } from './gemini-validate-tools.js';

export type GeminiValidation =
  | { ok: true; request: GeminiRequest; thinking: GeminiThinking }
  | { ok: false; message: string };

const MAX_OUTPUT_TOKENS = 65_536;
const MAX_STOP_SEQUENCES = 5;
const RESPONSE_MIME_TYPES = ['text/plain', 'application/json', 'application/xml', 'application/yaml', 'text/x.enum'];
const PREFIX = '* GenerateContentRequest.generation_config';
const MODELS_PREFIX = /^models\//;

function fail(message: string): never {
  throw new GeminiInvalid(message);
}

/** Gemini's wording for an out-of-range value: an inclusive minimum and an exclusive maximum. */
function checkRange(name: string, value: number | undefined, min: number, maxExclusive: number): void {
  if (value === undefined || (value >= min && value < maxExclusive)) return;
  fail(
    `Unable to submit request because it has a ${name} value of ${value} but the supported range is from ${min} (inclusive) to ${maxExclusive} (exclusive). Update the value and try again.`,
  );
}

function checkGenerationConfig(config: GeminiGenerationConfig | undefined, model: string): void {
  if (config === undefined) return;
  checkRange('temperature', config.temperature, 0, 2.0001);
  checkRange('topP', config.topP, 0, 1.0001);
  checkRange('topK', config.topK, 1, Number.MAX_SAFE_INTEGER);
  checkRange('maxOutputTokens', config.maxOutputTokens, 1, MAX_OUTPUT_TOKENS + 1);
  checkRange('presencePenalty', config.presencePenalty, -2, 2);
  checkRange('frequencyPenalty', config.frequencyPenalty, -2, 2);
  checkRange('candidateCount', config.candidateCount, 1, 9);
  // Gemini 2.5 returns up to 8 candidates; Gemini 3 models return one.
  if (config.candidateCount !== undefined && config.candidateCount > 1 && isGemini3(model))
    fail('Multiple candidates is not enabled for this model');
  checkRange('logprobs', config.logprobs, 0, 21);
  const stops = config.stopSequences ?? [];
  if (stops.length > MAX_STOP_SEQUENCES)
    fail(`${PREFIX}.stop_sequences: at most ${MAX_STOP_SEQUENCES} stop sequences are allowed\n`);
  const mime = config.responseMimeType;
  if (mime !== undefined && !RESPONSE_MIME_TYPES.includes(mime)) {
    fail(
      `${PREFIX}.response_mime_type: allowed mimetypes are \`text/plain\`, \`application/json\`, \`application/xml\`, \`application/yaml\` and \`text/x.enum\`.\n`,
    );
  }
  if (config.responseSchema !== undefined && config.responseJsonSchema !== undefined) {
    fail(`${PREFIX}.response_schema: response_schema and response_json_schema are mutually exclusive\n`);
  }
  if (
    (config.responseSchema !== undefined || config.responseJsonSchema !== undefined) &&
    mime !== 'application/json' &&
    mime !== 'text/x.enum'
  ) {
    fail(
      `${PREFIX}.response_mime_type: response_mime_type must be one of ['application/json', 'text/x.enum'] when response_schema is set.\n`,
    );
  }
  if (config.responseJsonSchema !== undefined)
    checkJsonSchema(config.responseJsonSchema, 'generation_config.response_json_schema');
}

function checked(check: () => { request: GeminiRequest; thinking: GeminiThinking }): GeminiValidation {
  try {
    return { ok: true, ...check() };
  } catch (error) {
    if (error instanceof GeminiInvalid) return { ok: false, message: error.message };
    throw error;
  }
}

function checkRequest(request: GeminiRequest, model: string): GeminiThinking {
  checkContents(request.contents, model);
  checkSystemInstruction(request.systemInstruction);
  checkTools(request);
  checkGenerationConfig(request.generationConfig, model);
  return thinkingFor(model, request.generationConfig?.thinkingConfig);
}

export function validateGeminiRequest(body: unknown, model: string): GeminiValidation {
  return checked(() => {
    const request = normalizeGeminiRequest(body) as unknown as GeminiRequest;
    return { request, thinking: checkRequest(request, model) };
  });
}

/** countTokens: bare `contents` are checked alone; a `generateContentRequest` is checked whole. */
export function validateCountTokensRequest(body: unknown, model: string): GeminiValidation {
  return checked(() => {
    const normalized = normalizeCountTokensRequest(body);
    const inner = normalized['generateContentRequest'] as (GeminiRequest & { model?: string }) | undefined;
    if (inner !== undefined) {
      const { model: innerModel, ...request } = inner;
      return { request, thinking: checkRequest(request, innerModel?.replace(MODELS_PREFIX, '') ?? model) };
    }
    const request = { contents: (normalized['contents'] ?? []) as GeminiRequest['contents'] };
    checkContents(request.contents, model);
    return { request, thinking: { active: false, includeThoughts: false, scale: 1 } };
  });
}
