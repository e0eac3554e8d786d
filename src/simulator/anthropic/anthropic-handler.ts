/**
 * The simulator's Anthropic vendor, under `/anthropic` (the SDK's base URL): `POST /v1/messages`,
 * `POST /v1/messages/count_tokens` and `GET /v1/models`. Authenticates like Anthropic (`x-api-key` or
 * `Authorization: Bearer`, plus the required `anthropic-version`), validates like it, and plays a
 * deterministic turn — thinking, text, tool_use — through the shared response player.
 */
import { hasWebSearch, planWebSearch } from './anthropic-web-search.js';
import { searchesTheWeb } from '../search-intent.js';
import { FAULT_HEADER, parseRequestDirectives } from '../fault-directives.js';
import { hashHex } from '../reply-engine.js';
import { playJson, playStream, type PlayPlan } from '../response-player.js';
import { readJsonBody, sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import { planTurn } from '../turn-planner.js';
import type { VendorSimulator } from '../vendor-simulator.js';
import { anthropicPromptCache } from './anthropic-cache.js';
import { reportedPromptTokens } from '../prompt-cache/cache-counts.js';
import { anthropicErrorBody, anthropicErrorForStatus } from './anthropic-errors.js';
import {
  countInputTokens,
  isThinking,
  lastUserText,
  parallelCallsAllowed,
  replySeedText,
  toolOffers,
  toolRequirement,
  forcesServerTool,
  trailingToolResults,
} from './anthropic-prompt.js';
import { frameCount, messageBody, streamScript, type AnthropicReply } from './anthropic-response.js';
import { validateAnthropicRequest } from './anthropic-validate.js';

/** API versions are dates; SDKs send newer ones than the long-standing 2023-06-01. */
const VERSION = /^\d{4}-\d{2}-\d{2}$/;
const FIRST_VERSION = '2023-01-01';
const BEARER = /^Bearer\s+(.+)$/i;
const MODEL_PATH = /^\/v1\/models(?:\/([^/]+))?$/;
const MODELS = [
  { id: 'claude-opus-4-7', display_name: 'Claude Opus 4.7', created_at: '2026-04-16T00:00:00Z' },
  { id: 'claude-sonnet-4-6', display_name: 'Claude Sonnet 4.6', created_at: '2026-02-17T00:00:00Z' },
  { id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-10-15T00:00:00Z' },
];

function headers(exchange: SimulatorExchange): Record<string, string> {
  return { 'request-id': exchange.requestId };
}

function sendError(exchange: SimulatorExchange, status: number, type: string, message: string): void {
  sendJson(exchange, status, anthropicErrorBody(type, message, exchange.requestId), headers(exchange));
}

function invalid(exchange: SimulatorExchange, message: string): void {
  sendError(exchange, 400, 'invalid_request_error', message);
}

/** The key from `x-api-key` or a bearer token; then the version header Anthropic requires. */
function admit(exchange: SimulatorExchange): boolean {
  const { headers: requestHeaders } = exchange.request;
  const apiKey = requestHeaders['x-api-key'];
  const bearer =
    requestHeaders.authorization === undefined ? undefined : BEARER.exec(requestHeaders.authorization.trim())?.[1];
  const key = typeof apiKey === 'string' ? apiKey : bearer;
  if (!exchange.isKeyAccepted(key)) {
    sendError(
      exchange,
      401,
      'authentication_error',
      key === undefined ? 'x-api-key header is required' : 'invalid x-api-key',
    );
    return false;
  }
  const version = requestHeaders['anthropic-version'];
  if (typeof version !== 'string' || version.length === 0) {
    invalid(exchange, 'anthropic-version: header is required');
    return false;
  }
  if (!VERSION.test(version) || version < FIRST_VERSION) {
    invalid(exchange, `anthropic-version: invalid value '${version}'; use a date such as '2023-06-01'`);
    return false;
  }
  return true;
}

async function messages(exchange: SimulatorExchange, counting: boolean): Promise<void> {
  const read = await readJsonBody(exchange);
  if (read.kind === 'too-large')
    return sendError(exchange, 413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.');
  if (read.kind === 'invalid-json') return invalid(exchange, `There was an error parsing the body: ${read.message}`);
  const validation = validateAnthropicRequest(read.body, counting);
  if (!validation.ok) return invalid(exchange, validation.message);
  const request = validation.request;
  const inputTokens = countInputTokens(request);
  if (counting) return sendJson(exchange, 200, JSON.stringify({ input_tokens: inputTokens }), headers(exchange));

  const userText = lastUserText(request.messages);
  const { directives, problems } = parseRequestDirectives(userText, exchange.request.headers[FAULT_HEADER]);
  if (problems.length > 0) return invalid(exchange, `Simulator directive: ${problems.join('; ')}.`);
  if (directives.contextWindow !== undefined && inputTokens > directives.contextWindow)
    return invalid(exchange, `prompt is too long: ${inputTokens} tokens > ${directives.contextWindow} maximum`);
  const thinking = isThinking(request);
  const seedText = replySeedText(request);
  const toolResults = trailingToolResults(request.messages);
  const planned = planTurn({
    seedText,
    lastUserText: userText,
    directives,
    maxTokens: request.max_tokens,
    stopSequences: request.stop_sequences ?? [],
    reasoning: thinking,
    tools: toolOffers(request),
    toolChoice: toolRequirement(request),
    parallelCalls: parallelCallsAllowed(request),
    ...(toolResults === undefined ? {} : { toolResults }),
    ...(request.output_config?.format === undefined
      ? {}
      : { jsonOutput: { schema: request.output_config.format.schema } }),
  });
  if (!planned.ok) return invalid(exchange, `Simulator directive: ${planned.problem}.`);

  const reply: AnthropicReply = {
    id: `msg_01${hashHex(`${seedText}\n${request.model}`, 22)}`,
    model: request.model,
    plan: planned.plan,
    showThinking: thinking,
    prompt: anthropicPromptCache(exchange, request, reportedPromptTokens(inputTokens, directives), directives),
    webSearch:
      hasWebSearch(request) &&
      searchesTheWeb({
        lastUserText: userText,
        forced: forcesServerTool(request),
        followsToolResults: toolResults !== undefined,
        clientCalls: planned.plan.calls.length,
      })
        ? planWebSearch(userText, request)
        : undefined,
  };
  const plan: PlayPlan = {
    directives,
    renderError: (status) => ({ body: anthropicErrorForStatus(status, exchange.requestId) }),
    headers: headers(exchange),
  };
  if (request.stream === true) await playStream(exchange, streamScript(reply), plan);
  else
    await playJson(
      exchange,
      messageBody(reply),
      frameCount(planned.plan, thinking, reply.webSearch !== undefined),
      plan,
    );
}

function models(exchange: SimulatorExchange, id: string | undefined): void {
  const entries = MODELS.map((model) => ({ type: 'model', ...model }));
  if (id === undefined) {
    const body = {
      data: entries,
      has_more: false,
      first_id: entries[0]?.id ?? null,
      last_id: entries.at(-1)?.id ?? null,
    };
    sendJson(exchange, 200, JSON.stringify(body), headers(exchange));
    return;
  }
  const found = entries.find((model) => model.id === id);
  if (found === undefined) sendError(exchange, 404, 'not_found_error', `model: ${id}`);
  else sendJson(exchange, 200, JSON.stringify(found), headers(exchange));
}

async function handle(exchange: SimulatorExchange): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  const { path } = exchange;
  const counting = path === '/v1/messages/count_tokens';
  if (method === 'POST' && (path === '/v1/messages' || counting)) {
    if (admit(exchange)) await messages(exchange, counting);
    return;
  }
  const modelPath = MODEL_PATH.exec(path);
  if (method === 'GET' && modelPath !== null) {
    if (admit(exchange)) models(exchange, modelPath[1] === undefined ? undefined : decodeURIComponent(modelPath[1]));
    return;
  }
  sendError(exchange, 404, 'not_found_error', `Not found (${method} ${path})`);
}

export const anthropicSimulator: VendorSimulator = { vendor: 'anthropic', basePath: '/anthropic', handle };
