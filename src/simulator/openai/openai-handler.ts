/**
 * The simulator's OpenAI vendor: `POST /v1/chat/completions` and `GET /v1/models` under `/openai` (and the
 * bare `/v1/...` alias the server routes here). Checks the key and the request like OpenAI, then hands a
 * deterministic turn (text, tool calls, hidden reasoning for reasoning models) to the response player,
 * which applies pacing and faults.
 */
import { sseData } from '../../streaming/sse-writer.js';
import type { PromptCacheSplit } from '../prompt-cache.js';
import { hashHex } from '../reply-engine.js';
import { sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import type { TurnPlan } from '../turn-planner.js';
import type { VendorSimulator } from '../vendor-simulator.js';
import { openAiPromptCache } from './chat-cache.js';
import {
  authenticateBearer,
  chatToolCallId,
  sendVendorError,
  serveChatCompletion,
  type ChatVendor,
  type ReasoningMode,
} from './chat-completions-flow.js';
import { invalidRequest, openAiErrorBody, openAiErrorForStatus } from './openai-errors.js';
import type { ChatDialect } from './openai-response.js';
import type { OpenAiChatRequest } from './openai-types.js';
import { validateChatRequest } from './openai-validate.js';

const MODELS = ['gpt-5.5', 'gpt-5.4', 'gpt-4o-mini', 'o3', 'o4-mini'];
const MODELS_CREATED = 1_767_225_600; // fixed, so listings are reproducible
const MODEL_PATH = /^\/v1\/models(?:\/([^/]+))?$/;
/** o-series models always reason; GPT-5 models reason when asked for an effort other than `none`. */
const O_SERIES = /^o\d/;
const GPT_5 = /^gpt-5/;
const EFFORT_SCALE: Record<string, number> = { minimal: 0.25, low: 0.5, medium: 1, high: 2, xhigh: 3, max: 4 };

const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. " +
  'The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, ' +
  'please contact us through our help center at help.openai.com.)';

/** OpenAI's 401 texts, for a missing and for a refused key. */
function unauthorized(key: string | undefined): string {
  const message =
    key === undefined
      ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
      : `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`;
  return invalidRequest(message, null, 'invalid_api_key');
}

function reasoning(request: OpenAiChatRequest): ReasoningMode {
  const effort = request.reasoning_effort ?? undefined;
  const enabled =
    O_SERIES.test(request.model) || (GPT_5.test(request.model) && effort !== undefined && effort !== 'none');
  return { enabled, scale: effort === undefined ? 1 : (EFFORT_SCALE[effort] ?? 1) };
}

function usage(plans: readonly TurnPlan[], prompt: PromptCacheSplit): object {
  const completion = plans.reduce((sum, plan) => sum + plan.outputTokens, 0);
  const reasoningTokens = plans.reduce((sum, plan) => sum + plan.reasoningTokens, 0);
  return {
    prompt_tokens: prompt.total,
    completion_tokens: completion,
    total_tokens: prompt.total + completion,
    prompt_tokens_details: { cached_tokens: prompt.read, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const DIALECT: ChatDialect = {
  openAiExtras: true,
  showReasoning: false,
  usageOnFinishChunk: false,
  // OpenAI reports a failure after the 200 as a data line holding the usual error body (the SDK throws).
  errorFrame: (status) => sseData(openAiErrorBody(openAiErrorForStatus(status))),
  toolCallId: (call) => chatToolCallId(call.idSeed),
};

const OPENAI: ChatVendor = {
  validate: (body) => validateChatRequest(body),
  invalidJsonMessage: INVALID_JSON_MESSAGE,
  reasoning,
  usage,
  promptCache: openAiPromptCache,
  dialect: () => DIALECT,
  completionId: (raw) => `chatcmpl-${hashHex(raw)}`,
  renderError: (status) => ({ body: openAiErrorBody(openAiErrorForStatus(status)) }),
  contextOverflowBody: (promptTokens, contextWindow) =>
    invalidRequest(
      `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
      'messages',
      'context_length_exceeded',
    ),
  headers: (exchange) => ({ 'x-request-id': exchange.requestId, 'openai-version': '2020-10-01' }),
};

function modelObject(id: string): object {
  return { id, object: 'model', created: MODELS_CREATED, owned_by: 'openai' };
}

function models(exchange: SimulatorExchange, id: string | undefined): void {
  if (id === undefined) {
    sendJson(exchange, 200, JSON.stringify({ object: 'list', data: MODELS.map(modelObject) }));
  } else if (MODELS.includes(id)) {
    sendJson(exchange, 200, JSON.stringify(modelObject(id)));
  } else {
    const message = `The model '${id}' does not exist`;
    sendVendorError(exchange, OPENAI, 404, invalidRequest(message, 'model', 'model_not_found'));
  }
}

async function handle(exchange: SimulatorExchange): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  const { path } = exchange;
  if (method === 'POST' && path === '/v1/chat/completions') {
    if (authenticateBearer(exchange, OPENAI, unauthorized)) await serveChatCompletion(exchange, OPENAI);
    return;
  }
  const modelPath = MODEL_PATH.exec(path);
  if (method === 'GET' && modelPath !== null) {
    if (authenticateBearer(exchange, OPENAI, unauthorized))
      models(exchange, modelPath[1] === undefined ? undefined : decodeURIComponent(modelPath[1]));
    return;
  }
  sendVendorError(exchange, OPENAI, 404, invalidRequest(`Invalid URL (${method} ${path})`));
}

export const openAiSimulator: VendorSimulator = { vendor: 'openai', basePath: '/openai/v1', handle };
