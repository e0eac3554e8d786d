/**
 * OpenAI's checks of the `messages` array: the shape of each message and content part per role, inline
 * images (data URLs must be base64 of a supported image type), and the ordering rule that an assistant
 * `tool_calls` message is followed by exactly one `tool` message per call id.
 */
import { WEB_IMAGE_TYPES, decodeBase64, isPdf, parseDataUrl } from '../media.js';
import {
  fail,
  invalidType,
  invalidValue,
  isObject,
  missing,
  requireObject,
  requireString,
  type Json,
} from './openai-validate-primitives.js';

const ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer'];
const PART_TYPES: Record<string, readonly string[]> = {
  system: ['text'],
  developer: ['text'],
  tool: ['text'],
  user: ['text', 'image_url', 'input_audio', 'file'],
  assistant: ['text', 'refusal'],
};

function checkImageUrl(url: string, param: string): void {
  if (!url.startsWith('data:')) return; // remote URLs are fetched by the vendor; the simulator trusts them
  const dataUrl = parseDataUrl(url);
  if (dataUrl === undefined || decodeBase64(dataUrl.data) === undefined) {
    fail(
      `Invalid '${param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value with an invalid format.`,
      param,
      'invalid_value',
    );
  }
  if (!WEB_IMAGE_TYPES.includes(dataUrl.mediaType)) {
    fail(
      "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
      param,
      'invalid_image_format',
    );
  }
}

/** Inline file data: a base64 data URL; a PDF must really be one (the vendor reads its pages). */
function checkFileData(fileData: string, param: string): void {
  const dataUrl = parseDataUrl(fileData);
  const bytes = dataUrl === undefined ? undefined : decodeBase64(dataUrl.data);
  if (dataUrl === undefined || bytes === undefined) {
    fail(
      `Invalid '${param}'. Expected a base64-encoded data URL (e.g. 'data:application/pdf;base64,...'), but got a value with an invalid format.`,
      param,
      'invalid_value',
    );
  }
  if (dataUrl.mediaType === 'application/pdf' && !isPdf(bytes))
    fail(`Invalid '${param}': the file is not a valid PDF.`, param, 'invalid_value');
}

function checkPart(part: unknown, role: string, param: string): void {
  if (!isObject(part)) invalidType(param, 'an object', part);
  const type = part['type'];
  if (type === undefined) missing(`${param}.type`);
  const allowed = PART_TYPES[role] ?? [];
  if (typeof type !== 'string' || !allowed.includes(type)) invalidValue(`${param}.type`, type, allowed);
  switch (type) {
    case 'text':
    case 'refusal':
      requireString(part, type, `${param}.${type}`);
      break;
    case 'image_url': {
      const image = requireObject(part, 'image_url', `${param}.image_url`);
      requireString(image, 'url', `${param}.image_url.url`);
      checkImageUrl(image['url'] as string, `${param}.image_url.url`);
      const detail = image['detail'];
      if (detail !== undefined && detail !== null && !['auto', 'low', 'high'].includes(String(detail))) {
        invalidValue(`${param}.image_url.detail`, detail, ['auto', 'low', 'high']);
      }
      break;
    }
    case 'input_audio': {
      const audio = requireObject(part, 'input_audio', `${param}.input_audio`);
      requireString(audio, 'data', `${param}.input_audio.data`);
      if (audio['format'] !== 'wav' && audio['format'] !== 'mp3')
        invalidValue(`${param}.input_audio.format`, audio['format'], ['wav', 'mp3']);
      break;
    }
    case 'file': {
      const file = requireObject(part, 'file', `${param}.file`);
      if (typeof file['file_data'] !== 'string' && typeof file['file_id'] !== 'string')
        missing(`${param}.file.file_data`);
      if (typeof file['file_data'] === 'string') checkFileData(file['file_data'], `${param}.file.file_data`);
      break;
    }
  }
}

function checkContent(message: Json, role: string, param: string): void {
  const content = message['content'];
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) invalidType(`${param}.content`, 'one of a string or array of objects', content);
  if (content.length === 0) {
    fail(
      `Invalid '${param}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
      `${param}.content`,
      'empty_array',
    );
  }
  content.forEach((part, index) => {
    checkPart(part, role, `${param}.content[${index}]`);
  });
}

function checkToolCalls(calls: unknown, param: string): string[] {
  if (!Array.isArray(calls)) invalidType(param, 'an array', calls);
  return calls.map((call, index) => {
    const callParam = `${param}[${index}]`;
    if (!isObject(call)) invalidType(callParam, 'an object', call);
    requireString(call, 'id', `${callParam}.id`);
    const type = call['type'];
    if (type !== 'function' && type !== 'custom') invalidValue(`${callParam}.type`, type, ['function', 'custom']);
    const body = requireObject(call, type, `${callParam}.${type}`);
    requireString(body, 'name', `${callParam}.${type}.name`);
    requireString(
      body,
      type === 'function' ? 'arguments' : 'input',
      `${callParam}.${type}.${type === 'function' ? 'arguments' : 'input'}`,
    );
    return call['id'] as string;
  });
}

/** Shape of one message; returns the tool-call ids an assistant message opens. */
function checkMessage(message: unknown, index: number): string[] {
  const param = `messages[${index}]`;
  if (!isObject(message)) invalidType(param, 'an object', message);
  const role = message['role'];
  if (role === undefined) missing(`${param}.role`);
  if (typeof role !== 'string' || !ROLES.includes(role)) invalidValue(`${param}.role`, role, ROLES);
  if (message['name'] !== undefined && typeof message['name'] !== 'string')
    invalidType(`${param}.name`, 'a string', message['name']);
  if (role === 'function') {
    requireString(message, 'name', `${param}.name`);
    return [];
  }
  if (role === 'assistant') {
    const calls = message['tool_calls'];
    const ids = calls === undefined || calls === null ? [] : checkToolCalls(calls, `${param}.tool_calls`);
    const content = message['content'];
    if (content === undefined || content === null) {
      if (ids.length === 0 && message['function_call'] === undefined) {
        fail(`Invalid value for 'content': expected a string, got null.`, `messages.[${index}].content`, null);
      }
    } else {
      checkContent(message, role, param);
    }
    return ids;
  }
  if (message['content'] === undefined) missing(`${param}.content`);
  checkContent(message, role, param);
  if (role === 'tool') requireString(message, 'tool_call_id', `${param}.tool_call_id`);
  return [];
}

function unansweredCalls(ids: Set<string>, assistantIndex: number): never {
  fail(
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. ` +
      `The following tool_call_ids did not have response messages: ${[...ids].join(', ')}`,
    `messages.[${assistantIndex}].role`,
    null,
  );
}

/** Shapes, then OpenAI's ordering rule: an assistant `tool_calls` turn is followed by one tool message per id. */
export function checkMessages(messages: unknown[]): void {
  let pending = new Set<string>();
  let pendingFrom = -1;
  messages.forEach((message, index) => {
    const opened = checkMessage(message, index);
    const role = (message as Json)['role'];
    if (role === 'tool') {
      const id = (message as Json)['tool_call_id'] as string;
      if (!pending.delete(id)) {
        fail(
          `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`,
          `messages.[${index}].role`,
          null,
        );
      }
      return;
    }
    if (pending.size > 0) unansweredCalls(pending, pendingFrom);
    pending = new Set(opened);
    pendingFrom = index;
  });
  if (pending.size > 0) unansweredCalls(pending, pendingFrom);
}
