import { z } from 'zod';
import { fallbackModelsField } from '../shared/fallback-models-field.js';
import { MAX_MESSAGES, TOO_MANY_MESSAGES } from '../shared/request-limits.js';
import {
  anthropicServerToolSchemas,
  serverToolResultBlock,
  serverToolUseBlock,
} from './anthropic-server-tool-schema.js';

/**
 * Validation of the Anthropic Messages request (docs/protocols/wire-anthropic.md#request). Rules the real API enforces
 * are enforced here too, so a client sees the same 400 whichever vendor serves the model.
 */

const MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
const nonBlankText = z
  .string()
  .refine((text) => text.trim() !== '', 'text content blocks must contain non-whitespace text');
/** A prompt-cache breakpoint: `ephemeral` is the only type, `5m` (the default) and `1h` the only lifetimes. */
const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).nullish();

const textBlock = z.object({
  type: z.literal('text'),
  text: nonBlankText,
  cache_control: cacheControl,
  /** Sources an earlier reply's text cited (web search results…): replayed to Anthropic as received. */
  citations: z.array(z.looseObject({ type: z.string() })).nullish(),
});
const base64ImageSource = z.object({
  type: z.literal('base64'),
  media_type: z.enum(MEDIA_TYPES),
  data: z.string().min(1),
});
const urlSource = z.object({
  type: z.literal('url'),
  url: z.string().regex(/^https?:\/\//i, 'must be an http(s) URL'),
});
const imageBlock = z.object({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [base64ImageSource, urlSource]),
  cache_control: cacheControl,
});
const documentBlock = z.object({
  type: z.literal('document'),
  source: z.discriminatedUnion('type', [
    z.object({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string().min(1) }),
    z.object({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }),
    urlSource,
  ]),
  title: z.string().nullish(),
  context: z.string().nullish(),
  cache_control: cacheControl,
});
const toolId = z.string().regex(/^[a-zA-Z0-9_-]+$/, 'must match ^[a-zA-Z0-9_-]+$');
const toolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: toolId,
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
const toolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: toolId,
  content: z
    .union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock]))])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
const thinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string().min(1) });

const userBlock = z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock, toolResultBlock]);
const assistantBlock = z.discriminatedUnion('type', [
  textBlock,
  toolUseBlock,
  thinkingBlock,
  redactedThinkingBlock,
  serverToolUseBlock,
  serverToolResultBlock,
]);

/**
 * `SystemMessageParam`: an instruction at its place in the conversation, text only. The beta `clear_at` says how long
 * it applies: `next_user_message` ends it at the next user turn.
 */
const systemMessage = z.object({
  role: z.literal('system'),
  content: z.union([nonBlankText, z.array(textBlock).min(1, 'must contain at least one text block')]),
  clear_at: z.enum(['next_user_message', 'never']).nullish(),
});

const message = z.discriminatedUnion('role', [
  z.object({
    role: z.literal('user'),
    content: z.union([nonBlankText, z.array(userBlock).min(1, 'must contain at least one content block')]),
  }),
  z.object({ role: z.literal('assistant'), content: z.union([z.string(), z.array(assistantBlock)]) }),
  systemMessage,
]);

const customTool = z.object({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -'),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  cache_control: cacheControl,
  strict: z.boolean().optional(),
  defer_loading: z.boolean().optional(),
  type: z.literal('custom').optional(),
});
/** A tool is the client's own (`custom`, or no type) or one of Anthropic's, told apart by its versioned `type`. */
const tool = z.discriminatedUnion('type', [customTool, ...anthropicServerToolSchemas]);

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
const toolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), ...parallel }),
  z.object({ type: z.literal('any'), ...parallel }),
  z.object({ type: z.literal('tool'), name: z.string().min(1), ...parallel }),
  z.object({ type: z.literal('none') }),
]);

/** `updates` is the beta spelling (`thinking-display-updates-…`) Claude Code sends. */
const display = z.enum(['summarized', 'omitted', 'updates']).nullish();
const thinking = z.discriminatedUnion('type', [
  z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024), display }),
  z.object({ type: z.literal('disabled') }),
  z.object({ type: z.literal('adaptive'), display }),
  z.object({ type: z.literal('between_tools') }),
]);

/** Structured output: the reply is JSON text following `schema`, whose root must describe an object. */
const jsonOutputFormat = z.object({
  type: z.literal('json_schema'),
  schema: z.looseObject({ type: z.literal('object') }),
});

/** `output_config` (GA): structured output and how much effort the model spends. */
const outputConfig = z.looseObject({
  effort: z.enum(['low', 'medium', 'high', 'xhigh', 'max']).nullish(),
  format: jsonOutputFormat.nullish(),
});

/** Fields shared by /v1/messages and /v1/messages/count_tokens. */
const promptFields = {
  model: z.unknown().optional(),
  messages: z.array(message).min(1, 'must contain at least one message').max(MAX_MESSAGES, TOO_MANY_MESSAGES),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).max(128).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  output_config: outputConfig.optional(),
  /** Automatic caching: Anthropic places one breakpoint on the last cacheable block itself. */
  cache_control: cacheControl,
};

export const MAX_STOP_SEQUENCES = 16;

export const anthropicMessagesRequestSchema = z.looseObject({
  ...promptFields,
  max_tokens: z.number().int().min(1),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stop_sequences: z
    .array(nonBlankText)
    .max(MAX_STOP_SEQUENCES, `may hold at most ${MAX_STOP_SEQUENCES} sequences`)
    .optional(),
  stream: z.boolean().optional(),
  metadata: z.object({ user_id: z.string().max(256).nullish() }).optional(),
  /** Tollgate's extension: models tried in order after `model` when its vendor fails before the first byte. */
  models: fallbackModelsField,
});

export const anthropicCountTokensRequestSchema = z.looseObject(promptFields);

export type AnthropicMessagesRequestBody = z.output<typeof anthropicMessagesRequestSchema>;
export type AnthropicRequestMessage = AnthropicMessagesRequestBody['messages'][number];
export type AnthropicUserBlock = z.output<typeof userBlock>;
export type AnthropicAssistantBlock = z.output<typeof assistantBlock>;
export type AnthropicToolParam = z.output<typeof tool>;
export type AnthropicOutputConfig = z.output<typeof outputConfig>;
export type AnthropicToolResultPart = Exclude<
  Extract<AnthropicUserBlock, { type: 'tool_result' }>['content'],
  string | undefined
>[number];

/** Fields decoded into the canonical request; every other field is an extension for Anthropic upstreams. */
export const CANONICAL_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'max_tokens',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'stream',
  'metadata',
  'output_config',
  'cache_control',
  'models',
]);
