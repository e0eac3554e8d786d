/**
 * Gemini's checks of `contents`: roles user/model, non-empty parts with exactly one data field, inline
 * media that decodes to a supported type, turns alternating, and the function-calling rules the gateway
 * must get right (docs/protocols/translation.md#pitfalls): a model turn's calls are answered in the next user turn by
 * exactly as many `functionResponse` parts (#one-gemini-function-response-per-call), each naming its function
 * (#gemini-function-response-names); thought signatures are ones this simulator issued for that very part
 * (#reasoning-replayed-only-to-its-vendor), and on Gemini 3 the first call of each step in the current turn carries one
 * (#gemini-thought-signatures-on-calls).
 */
import { decodeBase64, isPdf, sniffImageType } from '../media.js';
import { isGeminiSignatureValid } from '../signatures.js';
import { isGemini3 } from './gemini-models.js';
import { GeminiInvalid } from './gemini-request-shape.js';
import type { GeminiContent, GeminiPart } from './gemini-types.js';

const PREFIX = '* GenerateContentRequest';
const DATA_FIELDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
] as const;
const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/heic', 'image/heif']);
const SNIFFED_IMAGES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/webp']);
const OTHER_TYPES: ReadonlySet<string> = new Set([
  'application/pdf',
  'application/json',
  'application/x-javascript',
  'application/x-python',
]);
const MEDIA_FAMILIES = ['audio/', 'video/', 'text/'];
/** Placeholders Google documents for histories that never had signatures. */
const DUMMY_SIGNATURES: ReadonlySet<string> = new Set([
  'skip_thought_signature_validator',
  'context_engineering_is_the_way_to_go',
]);
const SIGNATURE_DOCS = 'https://ai.google.dev/gemini-api/docs/thought-signatures';
const BASE64_URL_CHARS = /[-_]/g;

function fail(message: string): never {
  throw new GeminiInvalid(message);
}

function fieldFail(path: string, problem: string): never {
  fail(`${PREFIX}.${path}: ${problem}\n`);
}

function isSupportedMime(mime: string): boolean {
  return IMAGE_TYPES.has(mime) || OTHER_TYPES.has(mime) || MEDIA_FAMILIES.some((family) => mime.startsWith(family));
}

/** proto3 bytes allow URL-safe base64 without padding; decode either. */
function decodeBytes(data: string): Buffer | undefined {
  const standard = data.replace(BASE64_URL_CHARS, (char) => (char === '-' ? '+' : '/'));
  return decodeBase64(standard.padEnd(Math.ceil(standard.length / 4) * 4, '='));
}

function checkInlineData(part: GeminiPart, path: string): void {
  const mime = part.inlineData?.mimeType ?? '';
  if (mime === '') fieldFail(`${path}.inline_data.mime_type`, 'mime_type must be specified');
  if (!isSupportedMime(mime)) fail(`Unsupported MIME type: ${mime}`);
  const bytes = decodeBytes(part.inlineData?.data ?? '');
  if (bytes === undefined || bytes.length === 0) fieldFail(`${path}.inline_data.data`, 'data must not be empty');
  if (SNIFFED_IMAGES.has(mime) && sniffImageType(bytes) === undefined) {
    fail(
      'Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
    );
  }
  if (mime === 'application/pdf' && !isPdf(bytes)) fail('The document has no pages.');
}

function checkPart(part: GeminiPart, role: string, path: string): void {
  const set = DATA_FIELDS.filter((field) => part[field] !== undefined && !(field === 'text' && part.text === ''));
  const signedEmptyText = part.text === '' && part.thoughtSignature !== undefined;
  if (set.length === 0 && !signedEmptyText)
    fieldFail(`${path}.data`, "required oneof field 'data' must have one initialized field");
  if (set.length > 1)
    fail(`Invalid value at '${path}' (oneof), oneof field 'data' is already set. Cannot set '${set[1] ?? ''}'`);
  if (part.inlineData !== undefined) checkInlineData(part, path);
  if (part.fileData !== undefined && (part.fileData.fileUri ?? '') === '')
    fieldFail(`${path}.file_data.file_uri`, 'file_uri must be specified');
  if (part.functionCall !== undefined) {
    if (role !== 'model') fieldFail(`${path}.function_call`, 'function_call parts are only allowed in model turns');
    if ((part.functionCall.name ?? '') === '') fieldFail(`${path}.function_call.name`, 'Name cannot be empty.');
  }
  if (part.functionResponse !== undefined) {
    if (role !== 'user')
      fieldFail(`${path}.function_response`, 'function_response parts are only allowed in user turns');
    if ((part.functionResponse.name ?? '') === '') fieldFail(`${path}.function_response.name`, 'Name cannot be empty.');
  }
  const signature = part.thoughtSignature;
  if (signature !== undefined && !DUMMY_SIGNATURES.has(signature)) {
    const call =
      part.functionCall === undefined
        ? undefined
        : { name: part.functionCall.name, args: part.functionCall.args ?? {} };
    if (!isGeminiSignatureValid(signature, call)) fail('Corrupted thought signature.');
  }
}

function calls(content: GeminiContent | undefined): GeminiPart[] {
  return (content?.parts ?? []).filter((part) => part.functionCall !== undefined);
}

function responses(content: GeminiContent | undefined): GeminiPart[] {
  return (content?.parts ?? []).filter((part) => part.functionResponse !== undefined);
}

function roleOf(content: GeminiContent | undefined): string {
  return content?.role === undefined || content.role === '' ? 'user' : content.role;
}

/** Calls answered by the next turn, one response per call, names matching; responses follow a call turn. */
function checkFunctionTurns(contents: readonly GeminiContent[]): void {
  contents.forEach((content, index) => {
    const answers = responses(content);
    if (answers.length === 0) return;
    const previous = contents[index - 1];
    const asked = calls(previous);
    if (roleOf(previous) !== 'model' || asked.length === 0)
      fail('Please ensure that function response turn comes immediately after a function call turn.');
    if (answers.length !== asked.length) {
      fail(
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
      );
    }
    const open = asked.map((part) => part.functionCall?.name);
    (content.parts ?? []).forEach((part, position) => {
      const name = part.functionResponse?.name;
      if (name === undefined) return;
      const at = open.indexOf(name);
      if (at === -1)
        fieldFail(
          `contents[${index}].parts[${position}].function_response.name`,
          `Function response name '${name}' does not match any function call of the preceding model turn.`,
        );
      open.splice(at, 1);
    });
  });
  contents.forEach((content, index) => {
    if (calls(content).length > 0 && index + 1 < contents.length && responses(contents[index + 1]).length === 0) {
      fail(
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
      );
    }
  });
}

/** Gemini 3: in the current turn, each model step's first call carries the signature issued with it. */
function checkCallSignatures(contents: readonly GeminiContent[]): void {
  let turnStart = 0;
  contents.forEach((content, index) => {
    if (roleOf(content) === 'user' && responses(content).length === 0) turnStart = index + 1;
  });
  for (let index = turnStart; index < contents.length; index++) {
    const content = contents[index];
    if (roleOf(content) !== 'model') continue;
    const parts = content?.parts ?? [];
    const first = parts.findIndex((part) => part.functionCall !== undefined);
    if (first === -1 || parts[first]?.thoughtSignature !== undefined) continue;
    fail(
      'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. ' +
        `Additional data, function call \`${parts[first]?.functionCall?.name ?? ''}\` , position ${first + 1}. Please refer to ${SIGNATURE_DOCS} for more details.`,
    );
  }
}

export function checkContents(contents: readonly GeminiContent[] | undefined, model: string): void {
  if (contents === undefined || contents.length === 0) fieldFail('contents', 'contents is not specified');
  contents.forEach((content, index) => {
    const role = roleOf(content);
    if (role !== 'user' && role !== 'model') fail('Please use a valid role: user, model.');
    const parts = content.parts ?? [];
    if (parts.length === 0) fieldFail(`contents[${index}].parts`, 'contents.parts must not be empty.');
    parts.forEach((part, position) => {
      checkPart(part, role, `contents[${index}].parts[${position}]`);
    });
  });
  checkFunctionTurns(contents);
  for (let index = 1; index < contents.length; index++) {
    if (roleOf(contents[index]) === roleOf(contents[index - 1]))
      fail('Please ensure that multiturn requests alternate between user and model.');
  }
  if (isGemini3(model)) checkCallSignatures(contents);
}

export function checkSystemInstruction(system: GeminiContent | undefined): void {
  if (system === undefined) return;
  const parts = system.parts ?? [];
  if (parts.length === 0) fieldFail('system_instruction.parts', 'contents.parts must not be empty.');
  parts.forEach((part, index) => {
    if (part.text === undefined || part.text === '')
      fieldFail(`system_instruction.parts[${index}].text`, 'system_instruction only supports non-empty text parts');
  });
}
