import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accumulate } from '../../canonical/accumulate.js';
import type { ModelCatalog } from '../../catalog/model-catalog.js';
import { assertKeyMayUseModel } from '../../keys/key-permissions.js';
import type { ChatPipeline } from '../../pipeline/chat-pipeline.js';
import { allowedModels } from '../shared/allowed-models.js';
import {
  abortOnClientGone,
  setCostHeader,
  setExchangeHeaders,
  settledCharge,
  streamExchange,
} from '../shared/reply-exchange.js';
import { decodeGeminiCountTokensRequest, decodeGeminiGenerateRequest } from './gemini-decode-request.js';
import { encodeGeminiResponse, type GeminiResponseContext } from './gemini-encode-response.js';
import { GeminiStreamEncoder } from './gemini-encode-stream.js';
import { findGeminiModel, listGeminiModels, presentGeminiModel } from './gemini-models.js';

/**
 * Google's Generative Language API (`@google/genai`, Gemini CLI): `POST /v1beta/models/{model}:generateContent`,
 * `:streamGenerateContent` (`?alt=sse`, or Google's JSON array without it), `:countTokens`, and `GET /v1beta/models`
 * and `/v1beta/models/{model}`. The three POST methods also under `/v1` (the SDK's `apiVersion: 'v1'`); `GET /v1/models`
 * is the shared models API (models-api.ts), which answers Google clients in this shape. `{model}` is a public model
 * id, with or without `models/`.
 */

/** The model segment up to the method's colon (a `%3A` is decoded before matching, a `models%2F` prefix too). */
const MODEL_PARAM = ':model(^[^:]+)';
const VERSIONS = ['/v1beta', '/v1'] as const;

interface ModelParams {
  model: string;
}

export function registerGeminiGenerateRoutes(
  app: FastifyInstance,
  pipeline: ChatPipeline,
  catalog: ModelCatalog,
): void {
  const config = { protocol: 'google' as const, rateLimited: true };
  for (const version of VERSIONS) {
    const base = `${version}/models/${MODEL_PARAM}:`;
    app.post<{ Params: ModelParams }>(`${base}:generateContent`, { config }, (request, reply) =>
      generate(request, reply, false, `${version}/models/{model}:generateContent`),
    );
    app.post<{ Params: ModelParams }>(`${base}:streamGenerateContent`, { config }, (request, reply) =>
      generate(request, reply, true, `${version}/models/{model}:streamGenerateContent`),
    );
    app.post<{ Params: ModelParams }>(`${base}:countTokens`, { config: { protocol: 'google' } }, async (request) => {
      const model = findGeminiModel(catalog, request.params.model);
      const canonical = decodeGeminiCountTokensRequest(request.body, {
        model: model.id,
        media: pipeline.mediaInput(model),
      });
      return { totalTokens: await pipeline.countInputTokens(canonical, AbortSignal.timeout(30_000), request.auth!) };
    });
  }

  // Every key may list models (scope `any`, as GET /v1/models); one with a model allowlist sees only those it may use.
  app.get<{ Querystring: { pageSize?: string; pageToken?: string } }>(
    '/v1beta/models',
    { config: { protocol: 'google', scope: 'any' } },
    async (request) => {
      return listGeminiModels(allowedModels(catalog, request), request.query.pageSize, request.query.pageToken);
    },
  );
  app.get<{ Params: ModelParams }>(
    `/v1beta/models/${MODEL_PARAM}`,
    { config: { protocol: 'google', scope: 'any' } },
    async (request) => {
      const model = findGeminiModel(catalog, request.params.model);
      assertKeyMayUseModel(request.auth!, model);
      return presentGeminiModel(model);
    },
  );

  /** `route`: the method's path as the usage record names it (`/v1beta/models/{model}:generateContent`). */
  async function generate(
    request: FastifyRequest<{ Params: ModelParams }>,
    reply: FastifyReply,
    stream: boolean,
    route: string,
  ): Promise<FastifyReply> {
    const model = findGeminiModel(catalog, request.params.model);
    const { request: canonical, includeThoughts } = decodeGeminiGenerateRequest(
      request.body,
      { model: model.id, media: pipeline.mediaInput(model) },
      stream,
    );
    const abort = abortOnClientGone(reply);
    const exchange = await pipeline.start({
      auth: request.auth!,
      request: canonical,
      requestId: request.id,
      signal: abort.signal,
      trace: request.exchangeTrace,
      route,
    });
    const context: GeminiResponseContext = {
      responseId: request.id,
      model: exchange.model.id,
      vendor: exchange.model.vendor,
      includeThoughts,
    };
    setExchangeHeaders(reply, exchange, 'gemini-generate');
    if (!stream) {
      const response = await accumulate(exchange.events);
      setCostHeader(reply, exchange);
      return reply.send(encodeGeminiResponse(response, context, settledCharge(exchange)));
    }
    const query = request.query as Record<string, unknown> | undefined;
    await streamExchange(
      reply,
      exchange,
      new GeminiStreamEncoder(context, query?.alt === 'sse' ? 'sse' : 'json-array'),
    );
    return reply;
  }
}
