/**
 * The simulator's OpenAI vendor: `POST /v1/chat/completions` and `GET /v1/models` under `/openai` (and the
 * bare `/v1/...` alias the server routes here). Checks the key and the request like OpenAI, then hands a
 * deterministic reply to the response player, which applies pacing and faults.
 */
import { FAULT_HEADER, parseRequestDirectives } from '../fault-directives.js';
import { buildReply, hashHex } from '../reply-engine.js';
import { playJson, playStream, type PlayPlan } from '../response-player.js';
import { BodyTooLargeError, readBody, sendJson, type SimulatorExchange } from '../simulator-exchange.js';
import type { VendorSimulator } from '../vendor-simulator.js';
import { invalidRequest, openAiErrorBody, openAiErrorForStatus } from './openai-errors.js';
import { countPromptTokens, lastUserText, replySeedText } from './openai-prompt.js';
import { completionBody, streamScript, type OpenAiReplySet } from './openai-response.js';
import type { OpenAiChatRequest } from './openai-types.js';
import { validateChatRequest } from './openai-validate.js';

const MODELS = ['gpt-5.5', 'gpt-5.4', 'gpt-4o-mini', 'o3', 'o4-mini'];
const MODELS_CREATED = 1_767_225_600; // fixed, so listings are reproducible

const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. " +
  'The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, ' +
  'please contact us through our help center at help.openai.com.)';

function sendError(exchange: SimulatorExchange, status: number, body: string): void {
  sendJson(exchange, status, body, { 'x-request-id': exchange.requestId });
}

/** Returns true when the request carries an accepted bearer key; otherwise answers 401. */
function authenticate(exchange: SimulatorExchange): boolean {
  const header = exchange.request.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header.trim());
  const key = match?.[1];
  if (exchange.isKeyAccepted(key)) return true;
  const message =
    key === undefined
      ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
      : `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`;
  sendError(exchange, 401, invalidRequest(message, null, 'invalid_api_key'));
  return false;
}

function stopSequences(stop: OpenAiChatRequest['stop']): string[] {
  if (stop === undefined || stop === null) return [];
  return typeof stop === 'string' ? [stop] : stop;
}

async function chatCompletions(exchange: SimulatorExchange): Promise<void> {
  let raw: string;
  try {
    raw = await readBody(exchange);
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    sendError(exchange, 413, invalidRequest(error.message));
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    sendError(exchange, 400, invalidRequest(INVALID_JSON_MESSAGE));
    return;
  }
  const validation = validateChatRequest(body);
  if (!validation.ok) {
    const { message, param, code } = validation.error;
    sendError(exchange, 400, invalidRequest(message, param, code));
    return;
  }
  const request = validation.request;
  const userText = lastUserText(request.messages);
  const { directives, problems } = parseRequestDirectives(userText, exchange.request.headers[FAULT_HEADER]);
  if (problems.length > 0) {
    sendError(exchange, 400, invalidRequest(`Simulator directive: ${problems.join('; ')}.`, null, 'simulator_directive'));
    return;
  }

  const seedText = replySeedText(request);
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
  const stop = stopSequences(request.stop);
  const replies = Array.from({ length: request.n ?? 1 }, (_, variant) =>
    buildReply({ seedText, lastUserText: userText, words: directives.words, maxTokens, stopSequences: stop, variant }),
  );
  const set: OpenAiReplySet = {
    id: `chatcmpl-${hashHex(raw)}`,
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    replies,
    promptTokens: countPromptTokens(request),
  };
  const plan: PlayPlan = {
    directives,
    renderError: (status) => ({ body: openAiErrorBody(openAiErrorForStatus(status)) }),
    headers: { 'x-request-id': exchange.requestId, 'openai-version': '2020-10-01' },
  };
  if (request.stream === true) {
    const includeUsage = request.stream_options?.include_usage === true;
    await playStream(exchange, streamScript(set, includeUsage), plan);
  } else {
    const pieces = Math.max(...replies.map((reply) => reply.pieces.length));
    await playJson(exchange, completionBody(set), pieces, plan);
  }
}

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
    sendError(exchange, 404, invalidRequest(message, 'model', 'model_not_found'));
  }
}

async function handle(exchange: SimulatorExchange): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  const { path } = exchange;
  if (method === 'POST' && path === '/v1/chat/completions') {
    if (authenticate(exchange)) await chatCompletions(exchange);
    return;
  }
  const modelPath = /^\/v1\/models(?:\/([^/]+))?$/.exec(path);
  if (method === 'GET' && modelPath !== null) {
    if (authenticate(exchange)) models(exchange, modelPath[1] === undefined ? undefined : decodeURIComponent(modelPath[1]));
    return;
  }
  sendError(exchange, 404, invalidRequest(`Invalid URL (${method} ${path})`));
}

export const openAiSimulator: VendorSimulator = { vendor: 'openai', basePath: '/openai/v1', handle };
