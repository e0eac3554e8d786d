/**
 * The simulator's Gemini vendor, under `/gemini` (the base URL of the Developer API):
 * `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent` (`?alt=sse` for SSE, a JSON array
 * otherwise), `:countTokens`, and `GET /v1beta/models`. The key comes in `x-goog-api-key` or `?key=`; errors
 * are Google RPC bodies; the reply is a deterministic turn played through the shared response player.
 */
import { FAULT_HEADER, parseRequestDirectives } from '../fault-directives.js';
import { hashHex } from '../reply-engine.js';
import { playJson, playStream, type PlayPlan } from '../response-player.js';
import { readJsonBody, sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import { planTurn, type TurnPlan } from '../turn-planner.js';
import type { VendorSimulator } from '../vendor-simulator.js';
import { geminiPromptCache } from './gemini-cache.js';
import { reportedPromptTokens } from '../prompt-cache/cache-counts.js';
import { API_KEY_INVALID_DETAILS, geminiErrorBody, geminiFaultBody } from './gemini-errors.js';
import {
  countPromptTokens,
  lastUserText,
  replySeedText,
  toolOffers,
  toolRequirement,
  trailingToolResults,
} from './gemini-prompt.js';
import { groundingMetadata, hasGoogleSearch } from './gemini-grounding.js';
import { searchesTheWeb } from '../search-intent.js';
import { frameCount, generateContentBody, streamScript, type GeminiReply } from './gemini-response.js';
import { validateCountTokensRequest, validateGeminiRequest } from './gemini-validate.js';

const METHOD_PATH = /^\/(v1beta|v1|v1alpha)\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;
const MODEL_PATH = /^\/(?:v1beta|v1|v1alpha)\/models(?:\/([^/:]+))?$/;
const KNOWN_FAMILIES = /^(gemini|gemma)-/;
const MODELS = [
  'gemini-3-pro-preview',
  'gemini-2.5-pro',
  'gemini-2.5-flash',
  'gemini-2.5-flash-lite',
  'gemini-2.0-flash',
];
const UNREGISTERED =
  "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.";

function sendError(exchange: SimulatorExchange, code: number, message?: string, details?: unknown[]): void {
  sendJson(exchange, code, geminiErrorBody(code, message, details));
}

function authenticate(exchange: SimulatorExchange): boolean {
  const header = exchange.request.headers['x-goog-api-key'];
  const key = typeof header === 'string' ? header : (exchange.query.get('key') ?? undefined);
  if (exchange.isKeyAccepted(key)) return true;
  if (key === undefined || key === '') sendError(exchange, 403, UNREGISTERED);
  else sendError(exchange, 400, 'API key not valid. Please pass a valid API key.', API_KEY_INVALID_DETAILS);
  return false;
}

function modelNotFound(exchange: SimulatorExchange, version: string, model: string, method: string): void {
  sendError(
    exchange,
    404,
    `models/${model} is not found for API version ${version}, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`,
  );
}

async function countTokens(exchange: SimulatorExchange, model: string): Promise<void> {
  const read = await readJsonBody(exchange);
  if (read.kind !== 'ok')
    return sendError(exchange, read.kind === 'too-large' ? 413 : 400, `Invalid JSON payload received. ${read.message}`);
  const validation = validateCountTokensRequest(read.body, model);
  if (!validation.ok) return sendError(exchange, 400, validation.message);
  const prompt = countPromptTokens(validation.request);
  const promptTokensDetails = Object.entries(prompt.byModality).map(([modality, tokenCount]) => ({
    modality,
    tokenCount,
  }));
  sendJson(exchange, 200, JSON.stringify({ totalTokens: prompt.total, promptTokensDetails }));
}

async function generate(exchange: SimulatorExchange, model: string, stream: boolean): Promise<void> {
  const read = await readJsonBody(exchange);
  if (read.kind !== 'ok')
    return sendError(exchange, read.kind === 'too-large' ? 413 : 400, `Invalid JSON payload received. ${read.message}`);
  const validation = validateGeminiRequest(read.body, model);
  if (!validation.ok) return sendError(exchange, 400, validation.message);
  const { request, thinking } = validation;
  const userText = lastUserText(request.contents);
  const { directives, problems } = parseRequestDirectives(userText, exchange.request.headers[FAULT_HEADER]);
  if (problems.length > 0) return sendError(exchange, 400, `Simulator directive: ${problems.join('; ')}.`);
  const promptTokens = countPromptTokens(request).total;
  if (directives.contextWindow !== undefined && promptTokens > directives.contextWindow)
    return sendError(
      exchange,
      400,
      `The input token count (${promptTokens}) exceeds the maximum number of tokens allowed (${directives.contextWindow}).`,
    );
  const seedText = replySeedText(request);
  const toolResults = trailingToolResults(request.contents);
  const config = request.generationConfig;
  const plans: TurnPlan[] = [];
  for (let variant = 0; variant < (config?.candidateCount ?? 1); variant++) {
    const planned = planTurn({
      seedText,
      lastUserText: userText,
      directives,
      variant,
      ...(config?.maxOutputTokens === undefined ? {} : { maxTokens: config.maxOutputTokens }),
      stopSequences: config?.stopSequences ?? [],
      reasoning: thinking.active,
      reasoningScale: thinking.scale,
      tools: toolOffers(request),
      toolChoice: toolRequirement(request),
      parallelCalls: true,
      ...(toolResults === undefined ? {} : { toolResults }),
      ...(config?.responseMimeType === 'application/json'
        ? { jsonOutput: { schema: config.responseJsonSchema ?? config.responseSchema } }
        : {}),
    });
    if (!planned.ok) return sendError(exchange, 400, `Simulator directive: ${planned.problem}.`);
    plans.push(planned.plan);
  }

  const counted = countPromptTokens(request);
  const total = reportedPromptTokens(counted.total, directives);
  // A reported count that is not the prompt's is all text: the modality details still add up to it.
  const prompt = total === counted.total ? counted : { total, byModality: { TEXT: total } };
  const retryAfter = directives.retryAfterSeconds ?? 1;
  const reply: GeminiReply = {
    responseId: hashHex(`${seedText}\n${model}`, 22),
    modelVersion: model,
    plans,
    ...(config?.responseLogprobs === true ? { topLogprobs: config.logprobs ?? 0 } : {}),
    thinking,
    prompt,
    cachedTokens: geminiPromptCache(exchange, model, request, prompt.total, directives).read,
    signatureSeed: seedText,
    errorBody: (status) => geminiFaultBody(status, retryAfter),
    grounding:
      hasGoogleSearch(request) &&
      searchesTheWeb({
        lastUserText: userText,
        forced: false,
        followsToolResults: toolResults !== undefined,
        clientCalls: plans[0]?.calls.length ?? 0,
      })
        ? groundingMetadata(userText, plans[0]?.text.text ?? '')
        : undefined,
  };
  const plan: PlayPlan = {
    directives,
    renderError: (status) => ({ body: geminiFaultBody(status, retryAfter) }),
    headers: {},
  };
  if (stream) await playStream(exchange, streamScript(reply, exchange.query.get('alt') === 'sse'), plan);
  else await playJson(exchange, generateContentBody(reply), frameCount(plans, thinking), plan);
}

function modelEntry(name: string): object {
  return {
    name: `models/${name}`,
    version: '001',
    displayName: name,
    inputTokenLimit: 1_048_576,
    outputTokenLimit: 65_536,
    supportedGenerationMethods: ['generateContent', 'countTokens'],
    thinking: name.startsWith('gemini-2.5') || name.startsWith('gemini-3'),
  };
}

async function handle(exchange: SimulatorExchange): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  let path: string;
  try {
    path = decodeURIComponent(exchange.path);
  } catch {
    path = exchange.path;
  }
  const call = METHOD_PATH.exec(path);
  if (method === 'POST' && call !== null) {
    if (!authenticate(exchange)) return;
    const [, version = 'v1beta', model = '', action = ''] = call;
    if (!KNOWN_FAMILIES.test(model)) return modelNotFound(exchange, version, model, action);
    if (action === 'countTokens') await countTokens(exchange, model);
    else await generate(exchange, model, action === 'streamGenerateContent');
    return;
  }
  const listing = MODEL_PATH.exec(path);
  if (method === 'GET' && listing !== null) {
    if (!authenticate(exchange)) return;
    const name = listing[1];
    if (name === undefined) return sendJson(exchange, 200, JSON.stringify({ models: MODELS.map(modelEntry) }));
    if (!KNOWN_FAMILIES.test(name)) return modelNotFound(exchange, 'v1beta', name, 'get');
    return sendJson(exchange, 200, JSON.stringify(modelEntry(name)));
  }
  sendError(exchange, 404, `Method not found (${method} ${path}).`);
}

export const geminiSimulator: VendorSimulator = { vendor: 'gemini', basePath: '/gemini', handle };
