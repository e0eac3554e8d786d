/**
 * Request validation the way OpenAI's Chat Completions endpoint does it, with its messages, `param` and
 * `code` values, so a request the gateway translated badly fails in a test instead of passing silently.
 * The first problem found is reported, as OpenAI does. Unknown top-level fields are accepted.
 */
import type { OpenAiChatRequest } from './openai-types.js';

/** What OpenAI reports for a refused request (its `type` is always `invalid_request_error`). */
export interface OpenAiValidationError {
  message: string;
  param: string | null;
  code: string | null;
}

export type ValidationResult = { ok: true; request: OpenAiChatRequest } | { ok: false; error: OpenAiValidationError };

class Invalid extends Error {
  constructor(readonly detail: OpenAiValidationError) {
    super(detail.message);
  }
}

type Json = Record<string, unknown>;

const ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer'];
const PART_TYPES: Record<string, readonly string[]> = {
  system: ['text'],
  developer: ['text'],
  tool: ['text'],
  user: ['text', 'image_url', 'input_audio', 'file'],
  assistant: ['text', 'refusal'],
};
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** o-series reasoning models: `max_tokens` and non-default temperature are refused. */
const O_SERIES = /^o\d/;
/** Models documented as refusing `stop`. */
const NO_STOP_MODELS = /^o(3|4-mini)(-|$)/;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function fail(message: string, param: string | null, code: string | null): never {
  throw new Invalid({ message, param, code });
}

function invalidType(param: string, expected: string, value: unknown): never {
  fail(`Invalid type for '${param}': expected ${expected}, but got ${typeName(value)} instead.`, param, 'invalid_type');
}

function missing(param: string): never {
  fail(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

function invalidValue(param: string, value: unknown, supported: readonly string[]): never {
  const list = supported.map((item) => `'${item}'`);
  const joined = list.length > 1 ? `${list.slice(0, -1).join(', ')}, and ${list.at(-1)}` : (list[0] ?? '');
  fail(`Invalid value: '${String(value)}'. Supported values are: ${joined}.`, param, 'invalid_value');
}

function checkRange(param: string, value: number, min: number, max: number, kind: 'decimal' | 'integer'): void {
  if (value < min) fail(`Invalid '${param}': ${kind} below minimum value. Expected a value >= ${min}, but got ${value} instead.`, param, `${kind}_below_min_value`);
  if (value > max) fail(`Invalid '${param}': ${kind} above maximum value. Expected a value <= ${max}, but got ${value} instead.`, param, `${kind}_above_max_value`);
}

function checkDecimal(body: Json, key: string, min: number, max: number): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalidType(key, 'a decimal', value);
  checkRange(key, value, min, max, 'decimal');
}

function checkInteger(body: Json, key: string, min: number, max = Number.MAX_SAFE_INTEGER): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) invalidType(key, 'an integer', value);
  checkRange(key, value, min, max, 'integer');
}

function checkBoolean(body: Json, key: string): void {
  const value = body[key];
  if (value !== undefined && value !== null && typeof value !== 'boolean') invalidType(key, 'a boolean', value);
}

function requireString(holder: Json, key: string, param: string): void {
  const value = holder[key];
  if (value === undefined) missing(param);
  if (typeof value !== 'string') invalidType(param, 'a string', value);
}

function requireObject(holder: Json, key: string, param: string): Json {
  const value = holder[key];
  if (value === undefined) missing(param);
  if (!isObject(value)) invalidType(param, 'an object', value);
  return value;
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
      const detail = image['detail'];
      if (detail !== undefined && detail !== null && !['auto', 'low', 'high'].includes(String(detail))) {
        invalidValue(`${param}.image_url.detail`, detail, ['auto', 'low', 'high']);
      }
      break;
    }
    case 'input_audio': {
      const audio = requireObject(part, 'input_audio', `${param}.input_audio`);
      requireString(audio, 'data', `${param}.input_audio.data`);
      if (audio['format'] !== 'wav' && audio['format'] !== 'mp3') invalidValue(`${param}.input_audio.format`, audio['format'], ['wav', 'mp3']);
      break;
    }
    case 'file': {
      const file = requireObject(part, 'file', `${param}.file`);
      if (typeof file['file_data'] !== 'string' && typeof file['file_id'] !== 'string') missing(`${param}.file.file_data`);
      break;
    }
  }
}

function checkContent(message: Json, role: string, param: string): void {
  const content = message['content'];
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) invalidType(`${param}.content`, 'one of a string or array of objects', content);
  if (content.length === 0) {
    fail(`Invalid '${param}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`, `${param}.content`, 'empty_array');
  }
  content.forEach((part, index) => checkPart(part, role, `${param}.content[${index}]`));
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
    requireString(body, type === 'function' ? 'arguments' : 'input', `${callParam}.${type}.${type === 'function' ? 'arguments' : 'input'}`);
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
  if (message['name'] !== undefined && typeof message['name'] !== 'string') invalidType(`${param}.name`, 'a string', message['name']);
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
function checkMessages(messages: unknown[]): void {
  let pending = new Set<string>();
  let pendingFrom = -1;
  messages.forEach((message, index) => {
    const opened = checkMessage(message, index);
    const role = (message as Json)['role'];
    if (role === 'tool') {
      const id = (message as Json)['tool_call_id'] as string;
      if (!pending.delete(id)) {
        fail(`Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`, `messages.[${index}].role`, null);
      }
      return;
    }
    if (pending.size > 0) unansweredCalls(pending, pendingFrom);
    pending = new Set(opened);
    pendingFrom = index;
  });
  if (pending.size > 0) unansweredCalls(pending, pendingFrom);
}

function checkStop(body: Json, model: string): void {
  const stop = body['stop'];
  if (stop === undefined || stop === null) return;
  if (NO_STOP_MODELS.test(model)) fail(`Unsupported parameter: 'stop' is not supported with this model.`, 'stop', 'unsupported_parameter');
  if (typeof stop === 'string') return;
  if (!Array.isArray(stop)) invalidType('stop', 'one of a string or array of strings', stop);
  if (stop.length > 4) {
    fail(`Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length ${stop.length} instead.`, 'stop', 'array_above_max_length');
  }
  stop.forEach((item, index) => {
    if (typeof item !== 'string') invalidType(`stop[${index}]`, 'a string', item);
  });
}

function checkTools(body: Json): void {
  const tools = body['tools'];
  if (tools === undefined || tools === null) return;
  if (!Array.isArray(tools)) invalidType('tools', 'an array', tools);
  tools.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (!isObject(tool)) invalidType(param, 'an object', tool);
    const type = tool['type'];
    if (type !== 'function' && type !== 'custom') invalidValue(`${param}.type`, type, ['function', 'custom']);
    const definition = requireObject(tool, type, `${param}.${type}`);
    requireString(definition, 'name', `${param}.${type}.name`);
    const name = definition['name'] as string;
    if (!TOOL_NAME.test(name)) {
      fail(`Invalid '${param}.${type}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `${param}.${type}.name`, 'invalid_value');
    }
  });
}

function checkReasoningModel(body: Json, model: string): void {
  if (!O_SERIES.test(model)) return;
  if (body['max_tokens'] !== undefined && body['max_tokens'] !== null) {
    fail(`Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.`, 'max_tokens', 'unsupported_parameter');
  }
  const temperature = body['temperature'];
  if (temperature !== undefined && temperature !== null && temperature !== 1) {
    fail(`Unsupported value: 'temperature' does not support ${String(temperature)} with this model. Only the default (1) value is supported.`, 'temperature', 'unsupported_value');
  }
}

export function validateChatRequest(body: unknown): ValidationResult {
  try {
    if (!isObject(body)) fail(`Invalid type for request body: expected an object, but got ${typeName(body)} instead.`, null, 'invalid_type');
    const model = body['model'];
    if (model === undefined || model === null || model === '') fail('you must provide a model parameter', null, null);
    if (typeof model !== 'string') invalidType('model', 'a string', model);
    const messages = body['messages'];
    if (messages === undefined) missing('messages');
    if (!Array.isArray(messages)) invalidType('messages', 'an array', messages);
    if (messages.length === 0) {
      fail(`Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.`, 'messages', 'empty_array');
    }
    checkMessages(messages);
    checkDecimal(body, 'temperature', 0, 2);
    checkDecimal(body, 'top_p', 0, 1);
    checkDecimal(body, 'presence_penalty', -2, 2);
    checkDecimal(body, 'frequency_penalty', -2, 2);
    checkInteger(body, 'n', 1, 128);
    checkInteger(body, 'max_tokens', 1);
    checkInteger(body, 'max_completion_tokens', 1);
    checkInteger(body, 'top_logprobs', 0, 20);
    checkInteger(body, 'seed', Number.MIN_SAFE_INTEGER);
    checkBoolean(body, 'stream');
    checkBoolean(body, 'logprobs');
    checkStop(body, model);
    checkTools(body);
    const streamOptions = body['stream_options'];
    if (streamOptions !== undefined && streamOptions !== null) {
      if (body['stream'] !== true) fail(`The 'stream_options' parameter is only allowed when 'stream' is enabled.`, 'stream_options', null);
      if (!isObject(streamOptions)) invalidType('stream_options', 'an object', streamOptions);
    }
    checkReasoningModel(body, model);
    return { ok: true, request: body as unknown as OpenAiChatRequest };
  } catch (error) {
    if (error instanceof Invalid) return { ok: false, error: error.detail };
    throw error;
  }
}
