import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { accumulate } from '../../canonical/accumulate.js';
import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import { pageLimit } from '../shared/query-params.js';
import type { ChatExchange, ChatPipeline } from '../../pipeline/chat-pipeline.js';
import { validationError } from '../shared/format-validation-error.js';
import {
  abortOnClientGone,
  setCostHeader,
  setExchangeHeaders,
  settledCharge,
  streamExchange,
} from '../shared/reply-exchange.js';
import {
  decodeResponsesRequest,
  parseResponsesRequest,
  type DecodedResponsesRequest,
  type ParsedResponsesRequest,
} from './responses-decode-request.js';
import { encodeResponsesResponse, type ResponsesContext } from './responses-encode-response.js';
import { ResponsesStreamEncoder } from './responses-encode-stream.js';
import { pageInputItems, presentStoredResponse, type StoredResponses } from './stored-responses.js';

/**
 * The OpenAI Responses API (docs/protocols/wire-openai-responses.md): `POST /v1/responses` on any model of the catalog,
 * through the same pipeline (billing, holds, rate limits, one usage record) as the other two protocols; and the stored
 * responses of an account, `GET`/`DELETE /v1/responses/{id}` and `GET /v1/responses/{id}/input_items`. Without a store
 * (`stored` undefined) nothing is kept and every id is unknown.
 */
export function registerOpenAIResponsesRoutes(
  app: FastifyInstance,
  pipeline: ChatPipeline,
  stored: StoredResponses | undefined,
): void {
  app.post('/v1/responses', { config: { protocol: 'openai-responses', rateLimited: true } }, async (request, reply) => {
    const parsed = parseResponsesRequest(request.body);
    const accountId = request.auth!.organisation.id;
    const history = await resolveStoredContext(stored, accountId, parsed);
    const decoded = decodeResponsesRequest(parsed, history);
    const store = decoded.options.store ? stored : undefined;
    // Checked before anything is billed: a conversation too large to keep is refused, not served and then lost.
    const storedInput = store?.serialiseInput([...history, ...decoded.inputItems]);
    const canonical = decoded.request;

    const abort = abortOnClientGone(reply);
    const exchange = await pipeline.start({
      auth: request.auth!,
      request: canonical,
      requestId: request.id,
      signal: abort.signal,
      trace: request.exchangeTrace,
      route: '/v1/responses',
    });
    const context: ResponsesContext = {
      id: `resp_${request.id.slice('req_'.length)}`,
      model: exchange.model.id,
      createdAt: Math.floor(Date.now() / 1000),
      vendor: exchange.model.vendor,
      options: decoded.options,
    };
    const save = async (response: Record<string, unknown>): Promise<void> => {
      if (store === undefined || storedInput === undefined) return;
      // The reply is served and billed whatever happens here; a response that could not be kept is logged.
      await store
        .save(accountId, response, storedInput)
        .catch((error: unknown) =>
          request.log.error({ err: error, responseId: context.id }, 'storing the response failed'),
        );
    };
    if (!canonical.stream) {
      const response = await accumulate(exchange.events);
      const { body, stored: full } = encodeResponsesResponse(response, context, settledCharge(exchange));
      await save(full);
      setHeaders(reply, exchange, decoded);
      setCostHeader(reply, exchange);
      return reply.send(body);
    }
    setHeaders(reply, exchange, decoded);
    await streamExchange(reply, exchange, new ResponsesStreamEncoder(context, store === undefined ? undefined : save));
    return reply;
  });

  // `responses.inputTokens.count`: the input tokens the same request would be billed with; free, records nothing.
  app.post('/v1/responses/input_tokens', { config: { protocol: 'openai' } }, async (request) => {
    const body = request.body;
    const withInput =
      body !== null && typeof body === 'object' && !Array.isArray(body) && (body as { input?: unknown }).input == null
        ? { ...body, input: [] }
        : body;
    const parsed = parseResponsesRequest(withInput);
    const history = await resolveStoredContext(stored, request.auth!.organisation.id, parsed);
    const { request: canonical } = decodeResponsesRequest(parsed, history);
    return {
      object: 'response.input_tokens',
      input_tokens: await pipeline.countInputTokens(canonical, AbortSignal.timeout(30_000), request.auth!),
    };
  });

  app.get('/v1/responses/:id', { config: { protocol: 'openai' } }, async (request) => {
    const { id } = request.params as { id: string };
    const query = request.query as Record<string, unknown>;
    if (query.stream === 'true') {
      throw new GatewayError(
        'unsupported_parameter',
        "'stream' replay of a stored response is not supported: responses here are never in the background.",
        { param: 'stream' },
      );
    }
    const loaded = stored === undefined ? null : await stored.load(request.auth!.organisation.id, id);
    if (loaded === null) throw responseNotFound(id);
    return presentStoredResponse(loaded.response, includeOf(query));
  });

  app.delete('/v1/responses/:id', { config: { protocol: 'openai' } }, async (request) => {
    const { id } = request.params as { id: string };
    const deleted = stored === undefined ? false : await stored.delete(request.auth!.organisation.id, id);
    if (!deleted) throw responseNotFound(id);
    return { id, object: 'response', deleted: true };
  });

  app.get('/v1/responses/:id/input_items', { config: { protocol: 'openai' } }, async (request) => {
    const { id } = request.params as { id: string };
    const query = inputItemsQuery.safeParse(request.query, { reportInput: true });
    if (!query.success) throw validationError(query.error);
    const loaded = stored === undefined ? null : await stored.load(request.auth!.organisation.id, id);
    if (loaded === null) throw responseNotFound(id);
    const { after, limit, order } = query.data;
    return pageInputItems(loaded.inputItems, {
      limit,
      ...(after === undefined ? {} : { after }),
      ...(order === undefined ? {} : { order }),
    });
  });
}

const inputItemsQuery = z.looseObject({
  after: z.string().min(1).optional(),
  limit: pageLimit(100, 20),
  order: z.enum(['asc', 'desc']).optional(),
});

/** `include[]=a&include[]=b` (the SDK's form) or `include=a`. */
/**
 * What a request draws from the store, for a reply and for its token count alike: its `item_reference` inputs
 * replaced (in `parsed`) by the items they name, and the conversation of its `previous_response_id` (returned).
 */
async function resolveStoredContext(
  stored: StoredResponses | undefined,
  accountId: string,
  parsed: ParsedResponsesRequest,
): Promise<Array<Record<string, unknown>>> {
  if (Array.isArray(parsed.input) && stored !== undefined)
    parsed.input = await stored.resolveItemReferences(accountId, parsed.input);
  if (parsed.previous_response_id == null) return [];
  if (stored === undefined) throw previousNotFound(parsed.previous_response_id);
  return stored.conversation(accountId, parsed.previous_response_id);
}

function includeOf(query: Record<string, unknown>): string[] {
  const values = [query['include[]'], query.include]
    .flat()
    .filter((value): value is string => typeof value === 'string');
  for (const value of values) if (value === '') throw invalidRequest("'include' holds an empty value.", 'include');
  return values;
}

function setHeaders(reply: FastifyReply, exchange: ChatExchange, decoded: DecodedResponsesRequest): void {
  // Fields this protocol drops before any vendor sees them, beside the ones the vendor's adapter dropped.
  setExchangeHeaders(reply, exchange, 'openai-responses', decoded.droppedParameters);
}

function responseNotFound(id: string): GatewayError {
  return new GatewayError('not_found', `Response with id '${id}' not found.`);
}

function previousNotFound(id: string): GatewayError {
  return new GatewayError('not_found', `Previous response with id '${id}' not found.`, {
    param: 'previous_response_id',
  });
}
