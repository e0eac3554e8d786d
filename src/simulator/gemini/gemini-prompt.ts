/**
 * Reads the prompt of a validated Gemini request: the text the reply echoes and reads directives from,
 * the function responses of a final tool turn, the declared functions, and the prompt token count (the
 * same number for `generateContent` usage and `countTokens`).
 *
 * Prompt tokens, with the o200k tokenizer: 3 per content + its text, function calls and responses (name
 * and JSON); a flat 258 per image (Gemini's documented cost of a small image), 1,500 per document and 1,000
 * per audio or video part or file URI; system instruction text + 3; the JSON of the function declarations.
 */
import { countPromptWithin, countTokens } from '../reply-engine.js';
import type { ToolOffer, ToolRequirement } from '../turn-planner.js';
import type { GeminiContent, GeminiPart, GeminiRequest } from './gemini-types.js';

const TOKENS_PER_CONTENT = 3;
const TOKENS_PER_IMAGE = 258;
const TOKENS_PER_DOCUMENT = 1_500;
const TOKENS_PER_MEDIA = 1_000;

export type Modality = 'TEXT' | 'IMAGE' | 'DOCUMENT' | 'AUDIO' | 'VIDEO';

export interface PromptCount {
  total: number;
  byModality: Partial<Record<Modality, number>>;
}

function isUser(content: GeminiContent): boolean {
  return content.role === undefined || content.role === '' || content.role === 'user';
}

function textOf(content: GeminiContent): string {
  return (content.parts ?? [])
    .flatMap((part) => (part.text !== undefined && part.thought !== true ? [part.text] : []))
    .join('\n');
}

/** Text of the latest user content that has any (function-response-only turns are skipped). */
export function lastUserText(contents: readonly GeminiContent[]): string {
  for (let index = contents.length - 1; index >= 0; index--) {
    const content = contents[index];
    if (content === undefined || !isUser(content)) continue;
    const text = textOf(content);
    if (text.length > 0) return text;
  }
  return '';
}

function responseText(response: Record<string, unknown> | undefined): string {
  if (typeof response?.['output'] === 'string') return response['output'];
  if (typeof response?.['error'] === 'string') return `error: ${response['error']}`;
  return JSON.stringify(response ?? {});
}

/** Texts of the function responses in the final user content, when it carries any. */
export function trailingToolResults(contents: readonly GeminiContent[]): string[] | undefined {
  const last = contents.at(-1);
  if (last === undefined || !isUser(last)) return undefined;
  const results = (last.parts ?? []).flatMap((part) =>
    part.functionResponse === undefined ? [] : [responseText(part.functionResponse.response)],
  );
  return results.length === 0 ? undefined : results;
}

function mediaModality(mime: string): Modality {
  if (mime.startsWith('image/')) return 'IMAGE';
  if (mime.startsWith('audio/')) return 'AUDIO';
  if (mime.startsWith('video/')) return 'VIDEO';
  return 'DOCUMENT';
}

const MEDIA_TOKENS: Record<Modality, number> = {
  TEXT: 0,
  IMAGE: TOKENS_PER_IMAGE,
  DOCUMENT: TOKENS_PER_DOCUMENT,
  AUDIO: TOKENS_PER_MEDIA,
  VIDEO: TOKENS_PER_MEDIA,
};

function partCost(part: GeminiPart): [Modality, number] {
  if (part.inlineData !== undefined) {
    const modality = mediaModality(part.inlineData.mimeType ?? '');
    return [modality, MEDIA_TOKENS[modality]];
  }
  if (part.fileData !== undefined) {
    const modality = mediaModality(part.fileData.mimeType ?? '');
    return [modality, MEDIA_TOKENS[modality]];
  }
  if (part.functionCall !== undefined)
    return ['TEXT', countTokens(part.functionCall.name) + countTokens(JSON.stringify(part.functionCall.args ?? {}))];
  if (part.functionResponse !== undefined)
    return [
      'TEXT',
      countTokens(part.functionResponse.name) + countTokens(JSON.stringify(part.functionResponse.response ?? {})),
    ];
  return ['TEXT', countTokens(part.text ?? '')];
}

export function countPromptTokens(request: GeminiRequest): PromptCount {
  return countPromptWithin(() => countPromptTokensWithinBudget(request));
}

function countPromptTokensWithinBudget(request: GeminiRequest): PromptCount {
  const byModality: Partial<Record<Modality, number>> = {};
  const add = (modality: Modality, tokens: number): void => {
    byModality[modality] = (byModality[modality] ?? 0) + tokens;
  };
  const contents =
    request.systemInstruction === undefined ? request.contents : [request.systemInstruction, ...request.contents];
  for (const content of contents) {
    add('TEXT', TOKENS_PER_CONTENT);
    for (const part of content.parts ?? []) add(...partCost(part));
  }
  const declarations = (request.tools ?? []).flatMap((tool) => tool.functionDeclarations ?? []);
  if (declarations.length > 0) add('TEXT', countTokens(JSON.stringify(declarations)));
  const total = Object.values(byModality).reduce((sum, tokens) => sum + tokens, 0);
  return { total, byModality };
}

/** What the reply is derived from: the conversation only, so stream and non-stream requests agree. */
export function replySeedText(request: GeminiRequest): string {
  return JSON.stringify([request.systemInstruction ?? null, request.contents]);
}

export function toolOffers(request: GeminiRequest): ToolOffer[] {
  return (request.tools ?? []).flatMap((tool) =>
    (tool.functionDeclarations ?? []).map((declaration) => ({
      name: declaration.name ?? '',
      parameters: declaration.parametersJsonSchema ?? declaration.parameters,
    })),
  );
}

export function toolRequirement(request: GeminiRequest): ToolRequirement {
  const config = request.toolConfig?.functionCallingConfig;
  switch (config?.mode) {
    case 'NONE':
      return { kind: 'none' };
    case 'ANY':
      return {
        kind: 'any',
        ...(config.allowedFunctionNames === undefined ? {} : { allowed: config.allowedFunctionNames }),
      };
    default:
      return { kind: 'auto' };
  }
}
