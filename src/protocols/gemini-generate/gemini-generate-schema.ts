import { z } from 'zod';
import { fallbackModelsField } from '../shared/fallback-models-field.js';
import { MAX_MESSAGES, TOO_MANY_MESSAGES } from '../shared/request-limits.js';

/**
 * Validation of Google's `GenerateContentRequest` and `CountTokensRequest` as clients send them
 * (docs/protocols/wire-gemini.md#request, docs/protocols/wire-gemini.md#serving-gemini-clients; @google/genai 3.3's
 * `.d.ts`). Shapes only; the rules between fields (one data field per part, a functionResponse answering a call,
 * candidateCount) are the decoder's, which names the field at fault. Objects are loose: Google adds fields often, and
 * an unknown one is reported by the decoder, not refused here.
 */

const jsonObject = z.record(z.string(), z.unknown());

const part = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: z.looseObject({ mimeType: z.string().min(1), data: z.string() }).optional(),
  fileData: z.looseObject({ mimeType: z.string().optional(), fileUri: z.string().min(1) }).optional(),
  functionCall: z
    .looseObject({ name: z.string().min(1), args: jsonObject.nullish(), id: z.string().nullish() })
    .optional(),
  functionResponse: z
    .looseObject({
      name: z.string().min(1),
      response: jsonObject.nullish(),
      id: z.string().nullish(),
      parts: z
        .array(
          z.looseObject({ inlineData: z.looseObject({ mimeType: z.string().min(1), data: z.string() }).optional() }),
        )
        .optional(),
    })
    .optional(),
});

const content = z.looseObject({
  role: z.string().optional(),
  parts: z.array(part).min(1, 'must contain at least one part'),
});

const functionDeclaration = z.looseObject({
  name: z
    .string()
    .regex(
      /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/,
      'must start with a letter or underscore and hold at most 128 of a-z, A-Z, 0-9, _, ., : and -',
    ),
  description: z.string().optional(),
  parameters: jsonObject.optional(),
  parametersJsonSchema: z.unknown().optional(),
});

const tool = z.looseObject({ functionDeclarations: z.array(functionDeclaration).optional() });

const thinkingConfig = z.looseObject({
  includeThoughts: z.boolean().optional(),
  thinkingBudget: z.number().int().min(-1).optional(),
  thinkingLevel: z.enum(['THINKING_LEVEL_UNSPECIFIED', 'MINIMAL', 'LOW', 'MEDIUM', 'HIGH']).optional(),
});

const generationConfig = z.looseObject({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().min(1).optional(),
  candidateCount: z.number().int().min(1).max(8).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  stopSequences: z.array(z.string()).max(5, 'may hold at most 5 sequences').optional(),
  seed: z.number().int().optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  responseMimeType: z.string().optional(),
  responseSchema: jsonObject.optional(),
  responseJsonSchema: z.unknown().optional(),
  responseModalities: z.array(z.string()).optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.number().int().min(0).max(20).optional(),
  thinkingConfig: thinkingConfig.optional(),
});

const toolConfig = z.looseObject({
  functionCallingConfig: z
    .looseObject({
      mode: z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']).optional(),
      allowedFunctionNames: z.array(z.string()).optional(),
    })
    .optional(),
});

const generateFields = {
  contents: z.array(content).min(1, 'must contain at least one content').max(MAX_MESSAGES, TOO_MANY_MESSAGES),
  systemInstruction: z.looseObject({ role: z.string().optional(), parts: z.array(part) }).optional(),
  tools: z.array(tool).max(128).optional(),
  toolConfig: toolConfig.optional(),
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(z.looseObject({ category: z.string(), threshold: z.string() })).optional(),
};

export const geminiGenerateRequestSchema = z.looseObject({
  ...generateFields,
  /** Tollgate's extension: models tried in order after the path's when its vendor fails before the first byte. */
  models: fallbackModelsField,
});

/** `countTokens`: `contents` alone, or a whole `generateContentRequest` (its `model` is the path's). */
export const geminiCountTokensRequestSchema = z.looseObject({
  contents: generateFields.contents.optional(),
  generateContentRequest: z.looseObject({ model: z.string().optional(), ...generateFields }).optional(),
});

export type GeminiGenerateRequestBody = z.output<typeof geminiGenerateRequestSchema>;
export type GeminiRequestContent = z.output<typeof content>;
export type GeminiRequestPart = z.output<typeof part>;
export type GeminiRequestGenerationConfig = z.output<typeof generationConfig>;

/** Fields decoded into the canonical request; any other top-level field is an extension (Gemini upstreams only). */
export const CANONICAL_FIELDS: ReadonlySet<string> = new Set([
  'contents',
  'systemInstruction',
  'tools',
  'toolConfig',
  'generationConfig',
  'model',
  'models',
]);

/** Members of `generationConfig` decoded into the canonical request; others are dropped and reported. */
export const CANONICAL_GENERATION_FIELDS: ReadonlySet<string> = new Set([
  'temperature',
  'topP',
  'topK',
  'candidateCount',
  'maxOutputTokens',
  'stopSequences',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'responseModalities',
  'responseLogprobs',
  'logprobs',
  'thinkingConfig',
]);
