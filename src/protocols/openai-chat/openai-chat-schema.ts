import { z } from 'zod';
import { fallbackModelsField } from '../shared/fallback-models-field.js';
import { promptCacheKeySchema, promptCacheRetentionSchema } from '../shared/prompt-cache-fields.js';
import { MAX_MESSAGES, TOO_MANY_MESSAGES } from '../shared/request-limits.js';

/**
 * Validation of the OpenAI chat-completions request (docs/protocols/wire-openai-chat.md#request). Fields the canonical
 * model has no slot for are accepted as they are and travel as extensions to OpenAI-native upstreams.
 */

/**
 * Anthropic's prompt-cache breakpoint in the form OpenRouter and LiteLLM accept on chat requests for Anthropic
 * models: on a content part, on a message (its last content block), on a tool, and at the top level.
 */
const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).nullish();

const textPart = z.object({ type: z.literal('text'), text: z.string(), cache_control: cacheControl });
const imagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
  cache_control: cacheControl,
});
const audioPart = z.object({
  type: z.literal('input_audio'),
  input_audio: z.object({ data: z.string(), format: z.string() }),
  cache_control: cacheControl,
});
const filePart = z.object({
  type: z.literal('file'),
  file: z
    .object({
      file_data: z.string().min(1).optional(),
      file_id: z.string().optional(),
      filename: z.string().optional(),
    })
    .loose(),
  cache_control: cacheControl,
});
const refusalPart = z.object({ type: z.literal('refusal'), refusal: z.string() });

const userPart = z.discriminatedUnion('type', [textPart, imagePart, audioPart, filePart]);
const textOnly = z.union([z.string(), z.array(textPart)]);

const toolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.object({
    role: z.literal('system'),
    content: textOnly,
    name: z.string().optional(),
    cache_control: cacheControl,
  }),
  z.object({
    role: z.literal('developer'),
    content: textOnly,
    name: z.string().optional(),
    cache_control: cacheControl,
  }),
  z.object({
    role: z.literal('user'),
    content: z.union([z.string(), z.array(userPart)]),
    name: z.string().optional(),
    cache_control: cacheControl,
  }),
  z.object({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textPart, refusalPart]))]).nullish(),
    tool_calls: z.array(toolCall).optional(),
    refusal: z.string().nullish(),
    name: z.string().optional(),
    reasoning_content: z.string().nullish(),
    cache_control: cacheControl,
  }),
  z.object({
    role: z.literal('tool'),
    content: textOnly,
    tool_call_id: z.string().min(1),
    cache_control: cacheControl,
  }),
]);

const functionTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
    cache_control: cacheControl,
  }),
  cache_control: cacheControl,
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1) }) }),
]);

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().min(1),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

const positiveInteger = z.number().int().min(1);

/** `web_search_options`: the model searches the web before it answers (how much context, from where). */
const webSearchOptions = z.object({
  search_context_size: z.enum(['low', 'medium', 'high']).optional(),
  user_location: z
    .object({
      type: z.literal('approximate'),
      approximate: z.object({
        city: z.string().optional(),
        country: z.string().length(2, 'must be a 2-letter ISO 3166-1 country code').optional(),
        region: z.string().optional(),
        timezone: z.string().optional(),
      }),
    })
    .nullish(),
});

export const openAIChatRequestSchema = z.looseObject({
  // Checked against the catalog by the pipeline, whose error lists the valid ids.
  model: z.unknown().optional(),
  messages: z.array(message).min(1, 'must contain at least one message').max(MAX_MESSAGES, TOO_MANY_MESSAGES),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  max_completion_tokens: positiveInteger.nullish(),
  max_tokens: positiveInteger.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z
    .looseObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() })
    .nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4, 'may hold at most 4 sequences')]).nullish(),
  n: positiveInteger.max(128).nullish(),
  tools: z.array(functionTool).max(128).optional(),
  tool_choice: toolChoice.optional(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: responseFormat.optional(),
  seed: z.number().int().nullish(),
  user: z.string().optional(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  prompt_cache_key: promptCacheKeySchema,
  prompt_cache_retention: promptCacheRetentionSchema,
  cache_control: cacheControl,
  web_search_options: webSearchOptions.nullish(),
  /** Tollgate's extension (OpenRouter's shape): models tried in order after `model` when its vendor fails. */
  models: fallbackModelsField,
});

export type OpenAIChatRequestBody = z.output<typeof openAIChatRequestSchema>;
export type OpenAIChatRequestMessage = OpenAIChatRequestBody['messages'][number];
export type OpenAIChatCacheControl = z.output<typeof cacheControl>;

/** Fields decoded into the canonical request; every other field is an extension. */
export const CANONICAL_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'temperature',
  'top_p',
  'max_completion_tokens',
  'max_tokens',
  'stream',
  'stream_options',
  'stop',
  'n',
  'logprobs',
  'top_logprobs',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'seed',
  'user',
  'presence_penalty',
  'frequency_penalty',
  'reasoning_effort',
  'prompt_cache_key',
  'prompt_cache_retention',
  'cache_control',
  'web_search_options',
  'models',
]);
