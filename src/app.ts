import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { GatewayError } from './canonical/errors.js';
import type { ModelCatalog } from './catalog/model-catalog.js';
import { registerAccountApi } from './http/account-api.js';
import { registerBillingApi } from './http/billing-api.js';
import { createApiKeyAuthHook } from './http/api-key-auth.js';
import { registerHealth } from './http/health.js';
import { registerKeysApi } from './http/keys-api.js';
import { registerModelsApi } from './http/models-api.js';
import { registerUsageApi } from './http/usage-api.js';
import { createRateLimitHook } from './http/rate-limit-hook.js';
import { fromFrameworkError, sendError } from './http/render-error.js';
import './http/request-context.js';
import type { KeyService } from './keys/key-service.js';
import type { ChatPipeline } from './pipeline/chat-pipeline.js';
import type { RateLimiter } from './ratelimit/rate-limiter.js';
import type { BillingRepository } from './storage/billing-types.js';
import type { UsageRepository } from './storage/types.js';
import type { Tiers } from './ratelimit/tiers.js';
import { registerAnthropicMessagesRoutes } from './protocols/anthropic-messages/anthropic-messages-route.js';
import { registerOpenAIChatRoute } from './protocols/openai-chat/openai-chat-route.js';

export interface AppDependencies {
  catalog: ModelCatalog;
  keys: KeyService;
  pipeline: ChatPipeline;
  limiter: RateLimiter;
  tiers: Tiers;
  billing: BillingRepository;
  /** Usage records, for `GET /v1/usage/requests`. */
  usage: UsageRepository;
  freeTokensPerDay: number;
  bodyLimitBytes: number;
  logger: FastifyBaseLogger;
  now?: () => number;
}

/** Secrets never reach a log line, whatever logs the request. */
export const LOG_REDACTIONS = ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'];

/** The HTTP app: hooks in order (request id → API-key auth → rate limit → body → route), error rendering, routes. No socket. */
export function buildApp(deps: AppDependencies): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.bodyLimitBytes,
    // One concise line per request from our onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Our own ids: a client-chosen x-request-id must not collide with a settlement key.
    requestIdHeader: false,
    genReqId: () => `req_${randomUUID().replaceAll('-', '')}`,
    return503OnClosing: true,
  });
  app.decorateRequest('auth', null);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  app.setErrorHandler((error, request, reply) => {
    const gatewayError = fromFrameworkError(error);
    if (gatewayError.status >= 500 && !(error instanceof GatewayError && error.code.startsWith('upstream_'))) {
      request.log.error({ err: gatewayError.cause ?? error }, 'internal error');
    }
    return sendError(reply, gatewayError, request.routeOptions.config?.protocol ?? 'openai');
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new GatewayError('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`), 'openai'),
  );

  registerHealth(app);
  app.register(async (api) => {
    api.addHook('onRequest', createApiKeyAuthHook(deps.keys));
    api.addHook('onRequest', createRateLimitHook(deps.limiter, deps.tiers));
    registerModelsApi(api, deps.catalog);
    registerAccountApi(api, deps.tiers, { billing: deps.billing, freeTokensPerDay: deps.freeTokensPerDay, ...(deps.now === undefined ? {} : { now: deps.now }) });
    registerKeysApi(api, deps.keys, deps.now);
    registerBillingApi(api, deps.billing, deps.now);
    registerUsageApi(api, { billing: deps.billing, usage: deps.usage }, deps.now);
    registerOpenAIChatRoute(api, deps.pipeline);
    registerAnthropicMessagesRoutes(api, deps.pipeline);
  });
  return app;
}
