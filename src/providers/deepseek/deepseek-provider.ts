/**
 * The DeepSeek adapter (the delta family: `deepseek-v4-flash`, `deepseek-reasoner`). DeepSeek speaks the OpenAI
 * chat-completions dialect, so replies are read by the OpenAI mappers; only the request and the errors differ.
 *
 * Policies (docs/protocols/wire-deepseek.md, docs/protocols/translation.md#deepseek-same-role-runs,
 * #deepseek-reasoning-in-tool-loops):
 * - Content: text parts flattened into one string per message ("\n"); images and documents → 400
 *   `unsupported_parameter` naming the message. System prompts are `system` messages.
 * - Same-role runs are merged for every model (the reasoner rejects them; harmless elsewhere). Tool messages
 *   stay one per call.
 * - Thinking: `deepseek-reasoner` always thinks (no switch is sent; a request to turn it off is dropped and
 *   reported). Other models get an explicit `thinking` switch: on only when the client asked for reasoning
 *   (`reasoning_effort` other than `none`, Anthropic `thinking`, or DeepSeek's own `thinking` field), so the
 *   cheap chat model stays a chat model. Efforts map onto low / high / max; a token budget onto low or high.
 * - Reasoning replay: in thinking mode every assistant tool-call turn carries `reasoning_content` (its text, or
 *   "" when the client did not keep it); plain answer turns never do, and reasoning never becomes content.
 * - Thinking mode ignores temperature, top_p and the penalties, and rejects logprobs: all are left out and
 *   reported. Outside thinking mode they are sent, with `logprobs` / `top_logprobs` from an OpenAI client.
 * - Never sent, always reported: top_k, seed, user, parallel_tool_calls, tools[].strict (beta endpoint only),
 *   and every other extension.
 * - `max_tokens` carries the output limit (the only name DeepSeek documents). Streams ask for usage.
 * - `json_schema` → JSON mode (`json_object`) plus a system instruction with the schema; reported as
 *   `response_format.json_schema` because the schema is requested, not enforced.
 * - Replies: `reasoning_content` → reasoning blocks, `prompt_cache_hit/miss_tokens` → cache read / input,
 *   `insufficient_system_resource` → length, usage accepted on any chunk (the last wins), `: keep-alive`
 *   comments and blank lines before a JSON body ignored.
 * - Errors: 402 (the gateway's DeepSeek balance) → 502 addressed to the operator; other statuses by the
 *   shared table (422 → invalid request, 503 → unavailable).
 */
import {
  OpenAICompatibleProvider,
  type OpenAIDialect,
  type ProviderEndpointOptions,
} from '../openai/openai-compatible-provider.js';
import { buildDeepSeekRequest } from './deepseek-build-request.js';
import { deepSeekUpstreamError } from './deepseek-map-error.js';

/** The bare origin, e.g. `https://api.deepseek.com` (a path prefix such as a simulator's `/deepseek` is kept). */
export type DeepSeekProviderOptions = ProviderEndpointOptions;

const DEEPSEEK_DIALECT: OpenAIDialect = {
  vendor: 'deepseek',
  defaultLabel: 'DeepSeek',
  buildRequest: buildDeepSeekRequest,
  // DeepSeek names its request id `x-ds-trace-id`; an OpenAI-style id is taken when a proxy adds one instead.
  requestIdHeaders: ['x-ds-trace-id', 'x-request-id'],
  mapError: deepSeekUpstreamError,
};

export class DeepSeekProvider extends OpenAICompatibleProvider {
  constructor(options: DeepSeekProviderOptions) {
    super(options, DEEPSEEK_DIALECT);
  }
}
