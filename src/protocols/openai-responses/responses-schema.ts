import { z } from 'zod';
import { fallbackModelsField } from '../shared/fallback-models-field.js';
import { promptCacheKeySchema, promptCacheRetentionSchema } from '../shared/prompt-cache-fields.js';
import { MAX_MESSAGES, TOO_MANY_MESSAGES } from '../shared/request-limits.js';

/**
 * Validation of the OpenAI Responses request (docs/protocols/wire-openai-responses.md#request, the
 * `ResponseCreateParams` of openai 7.57). The body is loose: fields the gateway does not use are accepted and reported
 * as dropped. Input items are checked one by one by the decoder (their `type` picks the schema), so an unknown item
 * type can be named exactly.
 */

const inputText = z.looseObject({ type: z.literal('input_text'), text: z.string() });
const inputImage = z.looseObject({
  type: z.literal('input_image'),
  image_url: z.string().min(1).nullish(),
  file_id: z.string().nullish(),
  detail: z.enum(['auto', 'low', 'high', 'original']).nullish(),
});
const inputFile = z.looseObject({
  type: z.literal('input_file'),
  file_data: z.string().nullish(),
  file_id: z.string().nullish(),
  file_url: z.string().nullish(),
  filename: z.string().nullish(),
});
const outputText = z.looseObject({ type: z.literal('output_text'), text: z.string() });
const refusal = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });

export const inputContentPart = z.discriminatedUnion('type', [inputText, inputImage, inputFile, outputText, refusal]);
export type ResponsesContentPart = z.output<typeof inputContentPart>;

export const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  id: z.string().nullish(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(inputContentPart)]),
  status: z.string().nullish(),
});

export const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  namespace: z.string().nullish(),
  arguments: z.string(),
  status: z.string().nullish(),
});

export const functionCallOutputItem = z.looseObject({
  type: z.literal('function_call_output'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.discriminatedUnion('type', [inputText, inputImage, inputFile]))]),
  status: z.string().nullish(),
});

export const customToolCallItem = z.looseObject({
  type: z.literal('custom_tool_call'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  namespace: z.string().nullish(),
  input: z.string(),
});

export const customToolCallOutputItem = z.looseObject({
  type: z.literal('custom_tool_call_output'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(z.discriminatedUnion('type', [inputText, inputImage, inputFile]))]),
});

export const reasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().nullish(),
  summary: z.array(z.looseObject({ type: z.literal('summary_text'), text: z.string() })),
  content: z.array(z.looseObject({ type: z.literal('reasoning_text'), text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
  status: z.string().nullish(),
});

/** A web search an earlier reply ran: its findings are in that reply's cited text, so it is history only. */
export const webSearchCallItem = z.looseObject({
  type: z.literal('web_search_call'),
  id: z.string().nullish(),
  status: z.string().nullish(),
  action: z.looseObject({ type: z.string() }).nullish(),
});

export type ResponsesMessageItem = z.output<typeof messageItem>;
export type ResponsesFunctionCallItem = z.output<typeof functionCallItem>;
export type ResponsesFunctionCallOutputItem = z.output<typeof functionCallOutputItem>;
export type ResponsesReasoningItem = z.output<typeof reasoningItem>;
export type ResponsesCustomToolCallItem = z.output<typeof customToolCallItem>;
export type ResponsesCustomToolCallOutputItem = z.output<typeof customToolCallOutputItem>;
/** An input item after validation, with `type` filled in (messages may omit it). */
export type ResponsesInputItem =
  | (ResponsesMessageItem & { type: 'message' })
  | ResponsesFunctionCallItem
  | ResponsesFunctionCallOutputItem
  | ResponsesCustomToolCallItem
  | ResponsesCustomToolCallOutputItem
  | ResponsesReasoningItem
  | z.output<typeof webSearchCallItem>;

/** The item schema for each `type` the gateway understands. */
export const INPUT_ITEM_SCHEMAS = {
  message: messageItem,
  function_call: functionCallItem,
  function_call_output: functionCallOutputItem,
  custom_tool_call: customToolCallItem,
  custom_tool_call_output: customToolCallOutputItem,
  reasoning: reasoningItem,
  web_search_call: webSearchCallItem,
} as const;

const functionToolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
export const functionTool = z.looseObject({
  type: z.literal('function'),
  name: functionToolName,
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
/** A `custom` tool: free-text input (Codex's freeform `apply_patch`), optionally with a grammar. */
/** OpenAI's hosted web search (`web_search`, and the older `web_search_preview`), checked as OpenAI checks it. */
export const WEB_SEARCH_TOOL_TYPES: ReadonlySet<string> = new Set([
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
]);
export const webSearchTool = z.looseObject({
  type: z.string(),
  filters: z.looseObject({ allowed_domains: z.array(z.string().min(1)).nullish() }).nullish(),
  search_context_size: z.enum(['low', 'medium', 'high']).optional(),
  user_location: z
    .looseObject({
      type: z.literal('approximate').optional(),
      city: z.string().nullish(),
      country: z.string().length(2, 'must be a 2-letter ISO 3166-1 country code').nullish(),
      region: z.string().nullish(),
      timezone: z.string().nullish(),
    })
    .nullish(),
});

export const customTool = z.looseObject({
  type: z.literal('custom'),
  name: functionToolName,
  description: z.string().nullish(),
  format: z
    .union([
      z.looseObject({ type: z.literal('text') }),
      z.looseObject({ type: z.literal('grammar'), syntax: z.string(), definition: z.string() }),
    ])
    .nullish(),
});
/** A `namespace` tool: function and custom tools grouped under one name, called as `{ namespace, name }`. */
export const namespaceTool = z.looseObject({
  type: z.literal('namespace'),
  name: functionToolName,
  description: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string().min(1) })),
});
/** Any tool: `function` and `custom` tools are decoded, the other types are judged by the decoder's rule. */
const anyTool = z.looseObject({ type: z.string().min(1) });

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), name: z.string().min(1) }),
  z.looseObject({ type: z.string().min(1) }),
]);

const textFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    name: z.string().min(1),
    description: z.string().nullish(),
    schema: z.record(z.string(), z.unknown()),
    strict: z.boolean().nullish(),
  }),
]);

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

export const responsesRequestSchema = z.looseObject({
  // Checked against the catalog by the pipeline, whose error lists the valid ids.
  model: z.unknown().optional(),
  input: z.union([z.string(), z.array(z.unknown()).max(MAX_MESSAGES, TOO_MANY_MESSAGES)]).optional(),
  instructions: z.string().nullish(),
  tools: z.array(anyTool).max(128).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  max_tool_calls: z.number().int().min(0).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  reasoning: z
    .looseObject({
      effort: z.enum(REASONING_EFFORTS).nullish(),
      summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
      generate_summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
    })
    .nullish(),
  text: z
    .looseObject({ format: textFormat.nullish(), verbosity: z.enum(['low', 'medium', 'high']).nullish() })
    .nullish(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  prompt_cache_key: promptCacheKeySchema,
  prompt_cache_retention: promptCacheRetentionSchema,
  include: z.array(z.string()).nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  conversation: z.unknown().optional(),
  background: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_obfuscation: z.boolean().nullish() }).nullish(),
  truncation: z.enum(['auto', 'disabled']).nullish(),
  /** Tollgate's extension: models tried in order after `model` when its vendor fails before the first byte. */
  models: fallbackModelsField,
});

export type ResponsesRequestBody = z.output<typeof responsesRequestSchema>;

/** Fields the gateway acts on; any other field the client set is reported as dropped. */
export const HANDLED_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'reasoning',
  'text',
  'metadata',
  'user',
  'include',
  'top_logprobs',
  'store',
  'previous_response_id',
  'prompt_cache_key',
  'prompt_cache_retention',
  'stream',
  'stream_options',
  'models',
  // Fields whose default the gateway keeps or whose meaning it fulfils: nothing to report.
  'truncation',
  'background',
  'conversation',
  'safety_identifier',
]);

/** Largest number of `metadata` pairs OpenAI accepts. */
export const MAX_METADATA_PAIRS = 16;
