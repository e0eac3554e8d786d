/**
 * Request validation the way OpenAI's Chat Completions endpoint does it, with its messages, `param` and
 * `code` values, so a request the gateway translated badly fails in a test instead of passing silently.
 * The first problem found is reported, as OpenAI does. Unknown top-level fields are accepted. DeepSeek
 * reuses this with its own limits (`ChatValidationLimits`) and adds its rules on top.
 */
import { checkMessages } from './openai-validate-messages.js';
import { checkWebSearch } from './openai-web-search.js';
import {
  checkBoolean,
  checkDecimal,
  checkInteger,
  fail,
  Invalid,
  invalidType,
  invalidValue,
  isObject,
  missing,
  requireObject,
  requireString,
  typeName,
  type Json,
  type OpenAiValidationError,
} from './openai-validate-primitives.js';
import type { OpenAiChatRequest } from './openai-types.js';

export type { OpenAiValidationError } from './openai-validate-primitives.js';

export type ValidationResult = { ok: true; request: OpenAiChatRequest } | { ok: false; error: OpenAiValidationError };

export interface ChatValidationLimits {
  maxStopSequences: number;
  /** OpenAI's `prompt_cache_key` (at most 64 characters) and `prompt_cache_retention` are checked. */
  promptCacheFields?: boolean;
  /** OpenAI's `web_search_options`, taken only by its search models. */
  webSearch?: boolean;
}

const OPENAI_LIMITS: ChatValidationLimits = { maxStopSequences: 4, promptCacheFields: true, webSearch: true };
const PROMPT_CACHE_KEY_MAX = 64;
const PROMPT_CACHE_RETENTIONS = ['in_memory', '24h'];

function checkPromptCacheFields(body: Json): void {
  const key = body['prompt_cache_key'];
  if (key !== undefined && key !== null) {
    if (typeof key !== 'string') invalidType('prompt_cache_key', 'a string', key);
    if (key.length > PROMPT_CACHE_KEY_MAX) {
      fail(
        `Invalid 'prompt_cache_key': string too long. Expected a string with maximum length ${PROMPT_CACHE_KEY_MAX}, but got a string with length ${key.length} instead.`,
        'prompt_cache_key',
        'string_above_max_length',
      );
    }
  }
  const retention = body['prompt_cache_retention'];
  if (retention !== undefined && retention !== null && !PROMPT_CACHE_RETENTIONS.includes(retention as string))
    invalidValue('prompt_cache_retention', retention, PROMPT_CACHE_RETENTIONS);
}
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** o-series reasoning models: `max_tokens` and non-default temperature or top_p are refused. */
const O_SERIES = /^o\d/;
/** Models documented as refusing `stop`. */
const NO_STOP_MODELS = /^o(3|4-mini)(-|$)/;
const TOOL_CHOICE_MODES = ['none', 'auto', 'required'];
const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

function checkStop(body: Json, model: string, limits: ChatValidationLimits): void {
  const stop = body['stop'];
  if (stop === undefined || stop === null) return;
  if (NO_STOP_MODELS.test(model))
    fail(`Unsupported parameter: 'stop' is not supported with this model.`, 'stop', 'unsupported_parameter');
  if (typeof stop === 'string') return;
  if (!Array.isArray(stop)) invalidType('stop', 'one of a string or array of strings', stop);
  if (stop.length > limits.maxStopSequences) {
    fail(
      `Invalid 'stop': array too long. Expected an array with maximum length ${limits.maxStopSequences}, but got an array with length ${stop.length} instead.`,
      'stop',
      'array_above_max_length',
    );
  }
  stop.forEach((item, index) => {
    if (typeof item !== 'string') invalidType(`stop[${index}]`, 'a string', item);
  });
}

/** Checks `tools`; returns the names of the function tools. */
function checkTools(body: Json): string[] {
  const tools = body['tools'];
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) invalidType('tools', 'an array', tools);
  return tools.map((tool, index) => {
    const param = `tools[${index}]`;
    if (!isObject(tool)) invalidType(param, 'an object', tool);
    const type = tool['type'];
    if (type !== 'function' && type !== 'custom') invalidValue(`${param}.type`, type, ['function', 'custom']);
    const definition = requireObject(tool, type, `${param}.${type}`);
    requireString(definition, 'name', `${param}.${type}.name`);
    const name = definition['name'] as string;
    if (!TOOL_NAME.test(name)) {
      fail(
        `Invalid '${param}.${type}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `${param}.${type}.name`,
        'invalid_value',
      );
    }
    const parameters = definition['parameters'];
    if (type === 'function' && parameters !== undefined && !isObject(parameters))
      invalidType(`${param}.function.parameters`, 'an object', parameters);
    return name;
  });
}

function onlyWithTools(key: string): never {
  fail(`Invalid value for '${key}': '${key}' is only allowed when 'tools' are specified.`, key, null);
}

function checkToolChoice(body: Json, toolNames: readonly string[]): void {
  const choice = body['tool_choice'];
  if (body['parallel_tool_calls'] !== undefined && body['parallel_tool_calls'] !== null) {
    checkBoolean(body, 'parallel_tool_calls');
    if (toolNames.length === 0) onlyWithTools('parallel_tool_calls');
  }
  if (choice === undefined || choice === null) return;
  if (typeof choice === 'string') {
    if (!TOOL_CHOICE_MODES.includes(choice)) invalidValue('tool_choice', choice, TOOL_CHOICE_MODES);
    if (choice !== 'none' && toolNames.length === 0) onlyWithTools('tool_choice');
    return;
  }
  if (!isObject(choice)) invalidType('tool_choice', 'one of a string or an object', choice);
  if (toolNames.length === 0) onlyWithTools('tool_choice');
  const type = choice['type'];
  if (type === 'allowed_tools') {
    const allowed = requireObject(choice, 'allowed_tools', 'tool_choice.allowed_tools');
    if (allowed['mode'] !== 'auto' && allowed['mode'] !== 'required')
      invalidValue('tool_choice.allowed_tools.mode', allowed['mode'], ['auto', 'required']);
    if (!Array.isArray(allowed['tools'])) invalidType('tool_choice.allowed_tools.tools', 'an array', allowed['tools']);
    return;
  }
  if (type !== 'function' && type !== 'custom')
    invalidValue('tool_choice.type', type, ['function', 'custom', 'allowed_tools']);
  const named = requireObject(choice, type, `tool_choice.${type}`);
  requireString(named, 'name', `tool_choice.${type}.name`);
  const name = named['name'] as string;
  if (!toolNames.includes(name))
    fail(`Tool choice '${type}' '${name}' not found in 'tools' parameter.`, 'tool_choice', null);
}

function checkReasoningModel(body: Json, model: string): void {
  const effort = body['reasoning_effort'];
  if (effort !== undefined && effort !== null && (typeof effort !== 'string' || !REASONING_EFFORTS.includes(effort))) {
    invalidValue('reasoning_effort', effort, REASONING_EFFORTS);
  }
  if (!O_SERIES.test(model)) return;
  if (body['max_tokens'] !== undefined && body['max_tokens'] !== null) {
    fail(
      `Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.`,
      'max_tokens',
      'unsupported_parameter',
    );
  }
  const temperature = body['temperature'];
  if (temperature !== undefined && temperature !== null && temperature !== 1) {
    fail(
      `Unsupported value: 'temperature' does not support ${String(temperature)} with this model. Only the default (1) value is supported.`,
      'temperature',
      'unsupported_value',
    );
  }
  const topP = body['top_p'];
  if (topP !== undefined && topP !== null && topP !== 1) {
    fail(
      `Unsupported value: 'top_p' does not support ${String(topP)} with this model. Only the default (1) value is supported.`,
      'top_p',
      'unsupported_value',
    );
  }
}

export function validateChatRequest(body: unknown, limits: ChatValidationLimits = OPENAI_LIMITS): ValidationResult {
  try {
    if (!isObject(body))
      fail(
        `Invalid type for request body: expected an object, but got ${typeName(body)} instead.`,
        null,
        'invalid_type',
      );
    const model = body['model'];
    if (model === undefined || model === null || model === '') fail('you must provide a model parameter', null, null);
    if (typeof model !== 'string') invalidType('model', 'a string', model);
    const messages = body['messages'];
    if (messages === undefined) missing('messages');
    if (!Array.isArray(messages)) invalidType('messages', 'an array', messages);
    if (messages.length === 0) {
      fail(
        `Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
        'messages',
        'empty_array',
      );
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
    checkStop(body, model, limits);
    checkToolChoice(body, checkTools(body));
    const streamOptions = body['stream_options'];
    if (streamOptions !== undefined && streamOptions !== null) {
      if (body['stream'] !== true)
        fail(`The 'stream_options' parameter is only allowed when 'stream' is enabled.`, 'stream_options', null);
      if (!isObject(streamOptions)) invalidType('stream_options', 'an object', streamOptions);
    }
    if (limits.webSearch === true) checkWebSearch(body, model);
    checkReasoningModel(body, model);
    if (limits.promptCacheFields === true) checkPromptCacheFields(body);
    return { ok: true, request: body as unknown as OpenAiChatRequest };
  } catch (error) {
    if (error instanceof Invalid) return { ok: false, error: error.detail };
    throw error;
  }
}

/** Runs `check` the way `validateChatRequest` runs its own: the first `Invalid` becomes the result. */
export function runChecks(check: () => void): OpenAiValidationError | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (error instanceof Invalid) return error.detail;
    throw error;
  }
}
