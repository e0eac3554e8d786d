/**
 * Request validation the way Anthropic's Messages API does it (docs/protocols/wire-anthropic.md#request), with its
 * `field: problem` wording, so a request the gateway translated badly fails in a test instead of passing
 * silently: `max_tokens` required, temperature 0–1, tool definitions with an object `input_schema`,
 * `tool_choice` consistent with the tools, and the extended-thinking rules (budget ≥ 1024 and below
 * `max_tokens`; no forced tool use, temperature 1, no top_k with thinking —
 * docs/protocols/translation.md#forced-tool-use-with-thinking). `count_tokens` takes the same body without
 * `max_tokens`.
 */
import { checkSearchResultsIntact, checkServerTool } from './anthropic-web-search.js';
import { AnthropicInvalid, checkText, fail, isObject, requireString, type Json } from './anthropic-validate-blocks.js';
import { checkCacheControls } from './anthropic-validate-cache.js';
import { checkMessages } from './anthropic-validate-messages.js';
import type { AnthropicRequest } from './anthropic-types.js';

export type AnthropicValidation = { ok: true; request: AnthropicRequest } | { ok: false; message: string };

const MAX_OUTPUT_TOKENS = 128_000;
const MIN_THINKING_BUDGET = 1024;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_CHOICES = ['auto', 'any', 'tool', 'none'];
const THINKING_TYPES = ['enabled', 'disabled', 'adaptive', 'between_tools'];
const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'];
const DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

function checkNumber(body: Json, key: string, min: number, max: number, integer = false): void {
  const value = body[key];
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${key}: Input should be a valid number`);
  if (integer && !Number.isInteger(value)) fail(`${key}: Input should be a valid integer`);
  if (value < min) fail(`${key}: Input should be greater than or equal to ${min}`);
  if (value > max) fail(`${key}: Input should be less than or equal to ${max}`);
}

function checkMaxTokens(body: Json, model: string): number {
  const value = body['max_tokens'];
  if (value === undefined) fail('max_tokens: Field required');
  if (typeof value !== 'number' || !Number.isInteger(value)) fail('max_tokens: Input should be a valid integer');
  if (value < 1) fail('max_tokens: Input should be greater than or equal to 1');
  if (value > MAX_OUTPUT_TOKENS)
    fail(
      `max_tokens: ${value} > ${MAX_OUTPUT_TOKENS}, which is the maximum allowed number of output tokens for ${model}`,
    );
  return value;
}

function checkSystem(system: unknown): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system)) fail('system: Input should be a valid string or a valid list');
  system.forEach((block, index) => {
    if (!isObject(block) || block['type'] !== 'text')
      fail(
        `system.${index}: Input tag '${isObject(block) ? String(block['type']) : ''}' found using 'type' does not match any of the expected tags: 'text'`,
      );
    checkText(requireString(block, 'text', `system.${index}.text`), 'system');
  });
}

function checkStopSequences(stop: unknown): void {
  if (stop === undefined || stop === null) return;
  if (!Array.isArray(stop)) fail('stop_sequences: Input should be a valid list');
  stop.forEach((item, index) => {
    if (typeof item !== 'string') fail(`stop_sequences.${index}: Input should be a valid string`);
    if (item.trim().length === 0) fail('stop_sequences: each stop sequence must contain non-whitespace characters');
  });
}

/** Checks `tools`; returns the names of the client tools (the ones the simulator may call). */
function checkTools(tools: unknown): string[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) fail('tools: Input should be a valid list');
  const names = new Set<string>();
  tools.forEach((tool, index) => {
    if (!isObject(tool)) fail(`tools.${index}: Input should be a valid dictionary`);
    const type = tool['type'];
    const server = type !== undefined && type !== null && type !== 'custom';
    const path = server ? `tools.${index}.${String(type)}` : `tools.${index}.custom`;
    const name = requireString(tool, 'name', `${path}.name`);
    if (!TOOL_NAME.test(name)) fail(`${path}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    if (names.has(name)) fail('tools: Tool names must be unique.');
    names.add(name);
    if (server) {
      checkServerTool(tool, path);
      return;
    }
    const schema = tool['input_schema'];
    if (schema === undefined) fail(`${path}.input_schema: Field required`);
    if (!isObject(schema)) fail(`${path}.input_schema: Input should be a valid dictionary`);
    if (schema['type'] !== 'object') fail(`${path}.input_schema.type: Input should be 'object'`);
  });
  return [...names];
}

function checkToolChoice(choice: unknown, toolNames: readonly string[]): string | undefined {
  if (choice === undefined) return undefined;
  if (!isObject(choice)) fail('tool_choice: Input should be a valid dictionary');
  const type = choice['type'];
  if (typeof type !== 'string' || !TOOL_CHOICES.includes(type)) {
    fail(
      `tool_choice: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${TOOL_CHOICES.map((tag) => `'${tag}'`).join(', ')}`,
    );
  }
  if (type !== 'none' && toolNames.length === 0) fail('tool_choice may only be specified while providing tools.');
  if (type === 'tool') {
    const name = requireString(choice, 'name', 'tool_choice.tool.name');
    if (!toolNames.includes(name)) fail(`tool_choice.tool.name: Tool '${name}' not found in the provided tools.`);
  }
  const disable = choice['disable_parallel_tool_use'];
  if (disable !== undefined && typeof disable !== 'boolean')
    fail(`tool_choice.${type}.disable_parallel_tool_use: Input should be a valid boolean`);
  return type;
}

/** `output_config`: an effort level and a JSON-schema output format whose root is an object. */
function checkOutputConfig(config: unknown): void {
  if (config === undefined || config === null) return;
  if (!isObject(config)) fail('output_config: Input should be a valid dictionary');
  const effort = config['effort'];
  if (effort !== undefined && effort !== null && (typeof effort !== 'string' || !EFFORTS.includes(effort))) {
    fail(`output_config.effort: Input should be ${EFFORTS.map((value) => `'${value}'`).join(', ')}`);
  }
  const format = config['format'];
  if (format === undefined || format === null) return;
  if (!isObject(format) || format['type'] !== 'json_schema')
    fail("output_config.format.type: Input should be 'json_schema'");
  const schema = format['schema'];
  if (!isObject(schema)) fail('output_config.format.schema: Input should be a valid dictionary');
  if (schema['type'] !== 'object') fail('output_config.format.schema: The root of the schema must be of type "object"');
}

/** Checks `thinking`; returns whether the model thinks. */
function checkThinking(body: Json, maxTokens: number | undefined, choiceType: string | undefined): boolean {
  const thinking = body['thinking'];
  if (thinking === undefined || thinking === null) return false;
  if (!isObject(thinking) || typeof thinking['type'] !== 'string' || !THINKING_TYPES.includes(thinking['type'])) {
    fail(
      `thinking: Input tag '${isObject(thinking) ? String(thinking['type']) : ''}' found using 'type' does not match any of the expected tags: ${THINKING_TYPES.map((tag) => `'${tag}'`).join(', ')}`,
    );
  }
  if (thinking['type'] === 'disabled') return false;
  if (thinking['type'] === 'enabled') {
    const budget = thinking['budget_tokens'];
    if (budget === undefined) fail('thinking.enabled.budget_tokens: Field required');
    if (typeof budget !== 'number' || !Number.isInteger(budget))
      fail('thinking.enabled.budget_tokens: Input should be a valid integer');
    if (budget < MIN_THINKING_BUDGET)
      fail(`thinking.enabled.budget_tokens: Input should be greater than or equal to ${MIN_THINKING_BUDGET}`);
    if (maxTokens !== undefined && maxTokens <= budget) {
      fail(
        `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our documentation at ${DOCS}#max-tokens-and-context-window-size`,
      );
    }
  }
  if (choiceType === 'any' || choiceType === 'tool')
    fail('Thinking may not be enabled when tool_choice forces tool use.');
  const temperature = body['temperature'];
  if (temperature !== undefined && temperature !== null && temperature !== 1) {
    fail(
      `\`temperature\` may only be set to 1 when thinking is enabled. Please consult our documentation at ${DOCS}#feature-compatibility`,
    );
  }
  if (body['top_k'] !== undefined && body['top_k'] !== null)
    fail(
      `\`top_k\` must be unset when thinking is enabled. Please consult our documentation at ${DOCS}#feature-compatibility`,
    );
  const topP = body['top_p'];
  if (typeof topP === 'number' && topP < 0.95) {
    fail(
      `\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at ${DOCS}#feature-compatibility`,
    );
  }
  return true;
}

/** Claude's version from its id (`claude-opus-4-8` is 4.8, `claude-sonnet-4-20250514` 4.0, `claude-sonnet-5` 5.0). */
function claudeVersion(model: string): number {
  const [, major, minor] = /claude-[a-z]+-(\d+)(?:-(\d{1,2})(?!\d))?/.exec(model) ?? [];
  return major === undefined ? 0 : Number(major) + Number(minor ?? 0) / 10;
}

/**
 * Sampling fields by model, as the API answers them: Claude 4.7 and later refuse each of them at any value but
 * temperature's default; Claude 4.1 to 4.6 refuse `temperature` and `top_p` together.
 */
function checkSamplingForModel(body: Record<string, unknown>, model: string): void {
  const version = claudeVersion(model);
  const set = (field: string) => body[field] !== undefined && body[field] !== null;
  if (version >= 4.7) {
    for (const field of ['temperature', 'top_p', 'top_k'])
      if (set(field) && !(field === 'temperature' && body[field] === 1))
        fail(`\`${field}\` is deprecated for this model.`);
  } else if (version >= 4.1 && set('temperature') && set('top_p'))
    fail('`temperature` and `top_p` cannot both be specified for this model. Please use only one.');
}

/** `forCounting`: the count_tokens body, which has no `max_tokens` and no generation controls. */
export function validateAnthropicRequest(body: unknown, forCounting = false): AnthropicValidation {
  try {
    if (!isObject(body)) fail('Input should be a valid dictionary');
    const model = requireString(body, 'model', 'model');
    const maxTokens = forCounting ? undefined : checkMaxTokens(body, model);
    checkSystem(body['system']);
    checkNumber(body, 'temperature', 0, 1);
    checkNumber(body, 'top_p', 0, 1);
    checkNumber(body, 'top_k', 0, Number.MAX_SAFE_INTEGER, true);
    checkSamplingForModel(body, model);
    checkStopSequences(body['stop_sequences']);
    if (body['stream'] !== undefined && typeof body['stream'] !== 'boolean')
      fail('stream: Input should be a valid boolean');
    const metadata = body['metadata'];
    if (metadata !== undefined && !isObject(metadata)) fail('metadata: Input should be a valid dictionary');
    const choiceType = checkToolChoice(body['tool_choice'], checkTools(body['tools']));
    const thinking = checkThinking(body, maxTokens, choiceType);
    checkOutputConfig(body['output_config']);
    checkMessages(body['messages'], thinking);
    checkSearchResultsIntact(body['messages'] as AnthropicRequest['messages']);
    checkCacheControls(body);
    return { ok: true, request: body as unknown as AnthropicRequest };
  } catch (error) {
    if (error instanceof AnthropicInvalid) return { ok: false, message: error.message };
    throw error;
  }
}
