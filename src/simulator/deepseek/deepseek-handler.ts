/**
 * The simulator's DeepSeek vendor: `POST /chat/completions` (also under `/v1`, which DeepSeek accepts) and
 * `GET /models`, under `/deepseek`. The OpenAI dialect with DeepSeek's differences (docs/protocols/wire-deepseek.md):
 * `reasoning_content` in thinking mode (deltas before content in streams), cache hit/miss usage fields,
 * usage on the finish chunk, a `: keep-alive` comment before the first chunk, and its own refusals.
 */
import { sseComment, sseData } from '../../streaming/sse-writer.js';
import { deepSeekPromptCache } from '../openai/chat-cache.js';
import {
  authenticateBearer,
  chatToolCallId,
  sendVendorError,
  serveChatCompletion,
  type ChatVendor,
} from '../openai/chat-completions-flow.js';
import type { ChatDialect } from '../openai/openai-response.js';
import type { PromptCacheSplit } from '../prompt-cache.js';
import { hashHex } from '../reply-engine.js';
import { sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import type { TurnPlan } from '../turn-planner.js';
import type { VendorSimulator } from '../vendor-simulator.js';
import { deepSeekErrorBody } from './deepseek-errors.js';
import { isThinkingMode, validateDeepSeekRequest } from './deepseek-validate.js';

const MODELS = ['deepseek-chat', 'deepseek-reasoner'];
const CHAT_PATHS: ReadonlySet<string> = new Set(['/chat/completions', '/v1/chat/completions']);
const MODEL_PATHS: ReadonlySet<string> = new Set(['/models', '/v1/models']);
const KEEP_ALIVE = sseComment('keep-alive');

/** DeepSeek's 401 texts, for a missing and for a refused key. */
function unauthorized(key: string | undefined): string {
  const message =
    key === undefined
      ? 'Authentication Fails (auth header format should be Bearer sk-...)'
      : `Authentication Fails, Your api key: ****${key.slice(-4)} is invalid`;
  return deepSeekErrorBody(401, message);
}

/** A UUID-shaped id, as DeepSeek's completion ids are. */
function uuidLike(seed: string): string {
  const hex = hashHex(seed, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function usage(plans: readonly TurnPlan[], prompt: PromptCacheSplit): object {
  const completion = plans.reduce((sum, plan) => sum + plan.outputTokens, 0);
  const reasoningTokens = plans.reduce((sum, plan) => sum + plan.reasoningTokens, 0);
  return {
    prompt_tokens: prompt.total,
    completion_tokens: completion,
    total_tokens: prompt.total + completion,
    prompt_tokens_details: { cached_tokens: prompt.read },
    completion_tokens_details: { reasoning_tokens: reasoningTokens },
    prompt_cache_hit_tokens: prompt.read,
    prompt_cache_miss_tokens: prompt.total - prompt.read,
  };
}

function dialect(thinking: boolean): ChatDialect {
  return {
    openAiExtras: false,
    showReasoning: thinking,
    usageOnFinishChunk: true,
    preamble: KEEP_ALIVE,
    errorFrame: (status) => sseData(deepSeekErrorBody(status)),
    toolCallId: (call) => chatToolCallId(call.idSeed).replace('call_', 'call_0_'),
  };
}
const THINKING_DIALECT = dialect(true);
const CHAT_DIALECT = dialect(false);

const DEEPSEEK: ChatVendor = {
  validate: validateDeepSeekRequest,
  invalidJsonMessage: 'Failed to parse the request body as JSON',
  reasoning: (request) => ({ enabled: isThinkingMode(request), scale: 1 }),
  usage,
  promptCache: deepSeekPromptCache,
  dialect: (request) => (isThinkingMode(request) ? THINKING_DIALECT : CHAT_DIALECT),
  completionId: uuidLike,
  renderError: (status) => ({ body: deepSeekErrorBody(status) }),
  contextOverflowBody: (promptTokens, contextWindow, completionTokens) =>
    deepSeekErrorBody(
      400,
      `This model's maximum context length is ${contextWindow} tokens. However, you requested ${promptTokens + completionTokens} tokens (${promptTokens} in the messages, ${completionTokens} in the completion). Please reduce the length of the messages or completion.`,
    ),
  headers: (exchange) => ({ 'x-request-id': exchange.requestId }),
};

async function handle(exchange: SimulatorExchange): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  const { path } = exchange;
  if (method === 'POST' && CHAT_PATHS.has(path)) {
    if (authenticateBearer(exchange, DEEPSEEK, unauthorized)) await serveChatCompletion(exchange, DEEPSEEK);
    return;
  }
  if (method === 'GET' && MODEL_PATHS.has(path)) {
    if (authenticateBearer(exchange, DEEPSEEK, unauthorized)) {
      const data = MODELS.map((id) => ({ id, object: 'model', owned_by: 'deepseek' }));
      sendJson(exchange, 200, JSON.stringify({ object: 'list', data }));
    }
    return;
  }
  sendVendorError(exchange, DEEPSEEK, 404, deepSeekErrorBody(404, `Not Found (${method} ${path})`));
}

export const deepSeekSimulator: VendorSimulator = { vendor: 'deepseek', basePath: '/deepseek', handle };
