import { z } from 'zod';

/**
 * Anthropic's own tools, by versioned `type` (the SDK's ToolUnion): the vendor runs web search, web fetch, code
 * execution and tool search itself; bash, the text editor and memory are run by the client but defined by Anthropic,
 * so they carry no `input_schema`. Parameters are checked as the vendor checks them, so a mistake is a 400 here.
 */

export const WEB_SEARCH_TYPES = ['web_search_20250305', 'web_search_20260209', 'web_search_20260318'] as const;
export const WEB_FETCH_TYPES = [
  'web_fetch_20250910',
  'web_fetch_20260209',
  'web_fetch_20260309',
  'web_fetch_20260318',
] as const;
const CODE_EXECUTION_TYPES = [
  'code_execution_20250522',
  'code_execution_20250825',
  'code_execution_20260120',
  'code_execution_20260521',
] as const;

const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).nullish();
const domains = z.array(z.string().min(1)).nullish();
/** Members every Anthropic tool may carry. */
const common = {
  cache_control: cacheControl,
  defer_loading: z.boolean().optional(),
  strict: z.boolean().optional(),
  allowed_callers: z.array(z.string()).optional(),
};
const maxUses = z.number().int().min(1).nullish();

export const userLocationSchema = z.object({
  type: z.literal('approximate'),
  city: z.string().min(1).max(255).nullish(),
  region: z.string().min(1).max(255).nullish(),
  country: z.string().length(2, 'must be a 2-letter ISO 3166-1 country code').nullish(),
  timezone: z.string().min(1).max(255).nullish(),
});

/** Allowed and blocked domains exclude each other, as at Anthropic. */
const oneDomainList = (tool: { allowed_domains?: string[] | null; blocked_domains?: string[] | null }) =>
  !(tool.allowed_domains && tool.blocked_domains);
const DOMAIN_LISTS_MESSAGE = {
  message: 'allowed_domains and blocked_domains cannot both be set',
  path: ['blocked_domains'],
};

const webSearchTool = z
  .looseObject({
    type: z.enum(WEB_SEARCH_TYPES),
    name: z.literal('web_search'),
    max_uses: maxUses,
    allowed_domains: domains,
    blocked_domains: domains,
    user_location: userLocationSchema.nullish(),
    response_inclusion: z.enum(['full', 'excluded']).optional(),
    ...common,
  })
  .refine(oneDomainList, DOMAIN_LISTS_MESSAGE);

const webFetchTool = z
  .looseObject({
    type: z.enum(WEB_FETCH_TYPES),
    name: z.literal('web_fetch'),
    max_uses: maxUses,
    max_content_tokens: z.number().int().min(1).nullish(),
    allowed_domains: domains,
    blocked_domains: domains,
    citations: z.looseObject({ enabled: z.boolean().optional() }).nullish(),
    ...common,
  })
  .refine(oneDomainList, DOMAIN_LISTS_MESSAGE);

/** Tools with nothing to check beyond their name, which the vendor fixes for each type. */
function fixedTool<const T extends readonly [string, ...string[]]>(types: T, name: string) {
  return z.looseObject({ type: z.enum(types), name: z.literal(name), ...common });
}

export const anthropicServerToolSchemas = [
  webSearchTool,
  webFetchTool,
  fixedTool(CODE_EXECUTION_TYPES, 'code_execution'),
  fixedTool(['bash_20250124'], 'bash'),
  fixedTool(['text_editor_20250124'], 'str_replace_editor'),
  fixedTool(['text_editor_20250429', 'text_editor_20250728'], 'str_replace_based_edit_tool'),
  fixedTool(['memory_20250818'], 'memory'),
  fixedTool(['tool_search_tool_bm25_20251119', 'tool_search_tool_bm25'], 'tool_search_tool_bm25'),
  fixedTool(['tool_search_tool_regex_20251119', 'tool_search_tool_regex'], 'tool_search_tool_regex'),
  z.looseObject({ type: z.enum(['browser_toolset_20260801', 'computer_toolset_20260801']), ...common }),
] as const;

export type AnthropicServerTool = z.output<(typeof anthropicServerToolSchemas)[number]>;

/**
 * A block of a server tool's call or result, as a client sends it back in history: checked for its identity only,
 * and replayed to Anthropic as received (its content is the vendor's own, e.g. encrypted search results).
 */
export const SERVER_RESULT_BLOCK_TYPES = [
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
] as const;

const serverToolId = z.string().regex(/^[a-zA-Z0-9_-]+$/, 'must match ^[a-zA-Z0-9_-]+$');
export const serverToolUseBlock = z.looseObject({
  type: z.literal('server_tool_use'),
  id: serverToolId,
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
export const serverToolResultBlock = z.looseObject({
  type: z.enum(SERVER_RESULT_BLOCK_TYPES),
  tool_use_id: serverToolId,
  content: z.unknown(),
  cache_control: cacheControl,
});
