/**
 * DeepSeek's request checks: the OpenAI dialect's (`openai-validate.ts`, with up to 16 stop sequences),
 * then what DeepSeek refuses on top (docs/protocols/wire-deepseek.md#request,
 * docs/protocols/translation.md#deepseek-same-role-runs, #deepseek-reasoning-in-tool-loops): unknown models, `n` other
 * than 1, image/audio/file parts (no vision), JSON-schema output, and in thinking mode logprobs, successive same-role
 * messages (deepseek-reasoner) and replayed tool-call turns without their `reasoning_content`.
 */
import { runChecks, validateChatRequest, type ValidationResult } from '../openai/openai-validate.js';
import { fail, invalidValue, isObject, type Json } from '../openai/openai-validate-primitives.js';
import type { OpenAiChatRequest } from '../openai/openai-types.js';

const LIMITS = { maxStopSequences: 16 };
const MODEL_PREFIX = 'deepseek-';
const REASONER = 'reasoner';
const THINKING_TYPES = ['enabled', 'disabled'];

/** Thinking mode: the reasoner model, or `thinking: {type: "enabled"}` on another DeepSeek model. */
export function isThinkingMode(request: OpenAiChatRequest): boolean {
  if (request.thinking?.type === 'disabled') return false;
  return request.model.includes(REASONER) || request.thinking?.type === 'enabled';
}

function checkParts(messages: readonly Json[]): void {
  messages.forEach((message, index) => {
    const content = message['content'];
    if (!Array.isArray(content)) return;
    for (const part of content as Json[]) {
      if (part['type'] !== 'text') {
        fail(
          `Failed to deserialize the JSON body into the target type: messages[${index}]: unknown variant \`${String(part['type'])}\`, expected \`text\``,
          null,
          'invalid_request_error',
        );
      }
    }
  });
}

function checkAlternation(messages: readonly Json[], model: string): void {
  for (let index = 1; index < messages.length; index++) {
    const role = messages[index]?.['role'];
    if ((role === 'user' || role === 'assistant') && messages[index - 1]?.['role'] === role) {
      fail(
        `${model} does not support successive user or assistant messages (messages[${index - 1}] and messages[${index}] in your input). ` +
          'You should interleave the user/assistant messages in the message sequence.',
        null,
        'invalid_request_error',
      );
    }
  }
}

/** Inside the current tool loop (after the latest user message) every tool-call turn keeps its reasoning. */
function checkReasoningReplay(messages: readonly Json[]): void {
  let latestUser = -1;
  messages.forEach((message, index) => {
    if (message['role'] === 'user') latestUser = index;
  });
  for (let index = latestUser + 1; index < messages.length; index++) {
    const message = messages[index];
    const calls = message?.['tool_calls'];
    if (message?.['role'] !== 'assistant' || !Array.isArray(calls) || calls.length === 0) continue;
    if (typeof message['reasoning_content'] !== 'string') {
      fail(
        `Missing \`reasoning_content\` field in the assistant message at message index ${index}. ` +
          'For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls',
        null,
        'invalid_request_error',
      );
    }
  }
}

function checkDeepSeekRules(body: Json, request: OpenAiChatRequest): void {
  if (!request.model.startsWith(MODEL_PREFIX)) fail('Model Not Exist', null, 'invalid_request_error');
  const thinking = body['thinking'];
  if (thinking !== undefined && thinking !== null) {
    if (!isObject(thinking) || !THINKING_TYPES.includes(String(thinking['type'])))
      invalidValue('thinking.type', isObject(thinking) ? thinking['type'] : thinking, THINKING_TYPES);
  }
  if (request.n !== undefined && request.n !== null && request.n !== 1)
    fail('Invalid n value (currently only n = 1 is supported)', 'n', 'invalid_request_error');
  const format = body['response_format'];
  if (isObject(format) && format['type'] === 'json_schema')
    fail('This response_format type is unavailable now', 'response_format', 'invalid_request_error');
  const messages = request.messages as unknown as Json[];
  checkParts(messages);
  if (!isThinkingMode(request)) return;
  if (body['logprobs'] === true || (body['top_logprobs'] !== undefined && body['top_logprobs'] !== null)) {
    fail('logprobs and top_logprobs are not supported in thinking mode', 'logprobs', 'invalid_request_error');
  }
  if (request.model.includes(REASONER)) checkAlternation(messages, request.model);
  checkReasoningReplay(messages);
}

export function validateDeepSeekRequest(body: unknown): ValidationResult {
  const base = validateChatRequest(body, LIMITS);
  if (!base.ok) return base;
  const error = runChecks(() => checkDeepSeekRules(body as Json, base.request));
  return error === undefined ? base : { ok: false, error };
}
