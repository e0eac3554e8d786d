import type { ServerOptions } from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteOptions,
} from 'fastify';
import type { ModelCatalog } from './catalog/model-catalog.js';
import { registerAccountApi } from './http/account-api.js';
import { dashboardApi } from './http/dashboard/dashboard-api.js';
import type { DashboardDependencies } from './http/dashboard/dashboard-dependencies.js';
import { registerBillingApi } from './http/billing-api.js';
import { registerApiKeyGuard } from './http/api-key-auth.js';
import { handleClientError } from './http/client-error-handler.js';
import { answerFrameworkError, MAX_PARAM_LENGTH } from './http/framework-errors.js';
import { registerUnmatchedRequests } from './http/unmatched-requests.js';
import { registerShutdownHandling, type ShutdownState } from './http/graceful-shutdown.js';
import { registerHealth, type ReadinessCheck } from './http/health.js';
import { registerJsonBodyParser } from './http/json-body-parser.js';
import { lazySchemaCompilers } from './http/lazy-schema-compilers.js';
import { registerMetricsRoute, type MetricsSource } from './http/metrics-route.js';
import { createRequestMeasurer, isMeasuredRoute } from './http/request-metrics-hook.js';
import { appendOnRequestHook } from './http/route-hooks.js';
import { NO_METRICS, type GatewayMetrics } from './observability/gateway-metrics.js';
import type { OutageLog } from './observability/outage-log.js';
import { lazyChildLogger, logLevelEnabled } from './observability/request-logger.js';
import { registerKeysApi } from './http/keys-api.js';
import { registerAuditApi } from './http/audit-api.js';
import { registerModelsApi } from './http/models-api.js';
import { registerUsageApi } from './http/usage-api.js';
import { registerUsageExportApi } from './http/usage-export-api.js';
import { registerWebApp } from './http/web-app.js';
import { createRateLimitEnforcer } from './http/rate-limit-hook.js';
import { nextRequestId } from './ids/request-id.js';
import {
  clientAbortedUpload,
  clientAbortError,
  fromFrameworkError,
  logErrorReply,
  sendError,
} from './http/render-error.js';
import { requestProtocol } from './http/request-context.js';
import type { KeyService } from './keys/key-service.js';
import type { ProjectService } from './accounts/project-service.js';
import type { ChatPipeline } from './pipeline/chat-pipeline.js';
import type { RateLimiter } from './ratelimit/rate-limiter.js';
import type { BillingRepository } from './storage/billing-types.js';
import type { AuditLog } from './accounts/audit/audit-log.js';
import type { UsageRepository } from './storage/types.js';
import type { UsageExportRepository } from './storage/usage-export-types.js';
import type { Tiers } from './ratelimit/tiers.js';
import { registerAnthropicMessagesRoutes } from './protocols/anthropic-messages/anthropic-messages-route.js';
import {
  type OpenAIChatCall,
  registerOpenAIChatRoute,
  serveOpenAIChat,
} from './protocols/openai-chat/openai-chat-route.js';
import { registerOpenAIResponsesRoutes } from './protocols/openai-responses/openai-responses-route.js';
import type { StoredResponses } from './protocols/openai-responses/stored-responses.js';
import { registerGeminiGenerateRoutes } from './protocols/gemini-generate/gemini-generate-route.js';
import { routeOperation } from './telemetry/genai-attributes.js';
import type { Telemetry } from './telemetry/telemetry.js';

export interface AppDependencies {
  catalog: ModelCatalog;
  keys: KeyService;
  /** Which project a key made with `POST /v1/keys` goes in. */
  projects: ProjectService;
  pipeline: ChatPipeline;
  limiter: RateLimiter;
  tiers: Tiers;
  billing: BillingRepository;
  /** Usage records, for `GET /v1/usage/requests`. */
  usage: UsageRepository;
  /** Keyset pages of usage records, for `GET /v1/usage/export`. */
  usageExport: UsageExportRepository;
  freeTokensPerDay: number;
  bodyLimitBytes: number;
  logger: FastifyBaseLogger;
  now?: () => number;
  /** The audit log: `/v1` key changes record to it, `GET /v1/audit` reads it. */
  audit: AuditLog;
  /** The dashboard's JSON API under `/api` (session cookies, CSRF), when given. */
  dashboard?: DashboardDependencies;
  /** Fastify's `trustProxy` (TRUST_PROXY): honour X-Forwarded-For/-Proto/-Host from these proxies. */
  trustProxy?: boolean | number | string;
  /** Where request, rate-limit and other events are reported (default: nowhere). */
  metrics?: GatewayMetrics;
  /** `GET /metrics`: the exposition source and the optional bearer token (METRICS_TOKEN). */
  metricsEndpoint?: { source: MetricsSource; token: string | undefined };
  /** OpenTelemetry traces and GenAI metrics of the model routes (OTEL_EXPORTER_OTLP_ENDPOINT); absent: none. */
  telemetry?: Telemetry;
  /** Counts requests refused by a database or Redis outage, logging once per interval (default: a warning each). */
  outages?: OutageLog;
  /** What `/readyz` checks (storage, Redis). */
  readiness?: readonly ReadinessCheck[];
  /** Graceful shutdown: in-flight tracking, 503 while closing, the grace-period signal. */
  shutdown?: ShutdownState;
  /** PEM certificate and key: serve HTTPS directly. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Slow-loris and size guards of the HTTP server (defaults: Node's). */
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  maxHeaderBytes?: number;
  /** Where `POST /v1/responses` keeps responses (`store`); without it nothing is kept. */
  storedResponses?: StoredResponses;
  /** Directory of the built dashboard SPA (default: dist/web; a short 'not built' page when missing). */
  webRoot?: string;
}

/** The HTTP app: hooks in order (request id → API-key auth → rate limit → body → route), error rendering, routes. No socket. */
export function buildApp(deps: AppDependencies): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.bodyLimitBytes,
    // One concise line per request from our onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Our own ids: a client-chosen x-request-id must not collide with a settlement key.
    requestIdHeader: false,
    genReqId: nextRequestId,
    // The request's pino child is made only when it writes a line (see request-logger.ts).
    childLoggerFactory: lazyChildLogger,
    // With a ShutdownState the 503 comes from our hook, in the route's error shape.
    return503OnClosing: deps.shutdown === undefined,
    ...(deps.requestTimeoutMs === undefined ? {} : { requestTimeout: deps.requestTimeoutMs }),
    clientErrorHandler: handleClientError,
    // What the router refuses before any hook runs (bad percent-escapes, over-long parameters), in the path's shape.
    frameworkErrors: (error, request, reply) => {
      // No hook runs for these requests: measured and logged here like any other.
      if (measure !== undefined) measure(request, reply, 'unmatched');
      reply.raw.once('finish', () => logRequestLine(request, reply));
      answerFrameworkError(unmatched, error, request, reply);
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Ajv and fast-json-stringify only if a route ever declares a JSON schema (none does: zod validates).
    schemaController: { compilersFactory: lazySchemaCompilers() },
    ...serverTransport(deps),
    // A hop count as the function fastify's types expect (its runtime takes the number too).
    trustProxy: typeof deps.trustProxy === 'number' ? trustFirstHops(deps.trustProxy) : (deps.trustProxy ?? false),
  });
  app.decorateRequest('auth', null);
  // First: it collects the routes registered below, for its 405s.
  const unmatched = registerUnmatchedRequests(app);
  if (deps.shutdown !== undefined) registerShutdownHandling(app, deps.shutdown);
  registerJsonBodyParser(app);
  const metrics = deps.metrics ?? NO_METRICS;
  const measure = metrics === NO_METRICS ? undefined : createRequestMeasurer(metrics, deps.catalog);
  if (measure !== undefined) {
    // Each route's own hook knows its pattern (`request.routeOptions` would build an object per request to tell).
    app.addHook('onRoute', (route: RouteOptions) => {
      // A regex parameter's expression is no label: `/v1beta/models/:model(^[^:]+)::generateContent` → `/v1beta/models/:model:generateContent`.
      const pattern = route.url.replace(/\([^)]*\)/g, '').replace(/::/g, ':');
      if (!isMeasuredRoute(pattern)) return;
      appendOnRequestHook(route, function measureRoute(request, reply, done) {
        measure(request, reply, pattern);
        done();
      });
    });
  }
  const telemetry = deps.telemetry;
  if (telemetry !== undefined) {
    // Before the API-key hooks (an app-level onRoute hook runs first): a refused request has its span too.
    app.addHook('onRoute', (route: RouteOptions) => {
      const pattern = route.url.replace(/\([^)]*\)/g, '').replace(/::/g, ':');
      if (routeOperation(pattern) === undefined) return;
      appendOnRequestHook(route, function traceExchange(request, reply, done) {
        const exchange = telemetry.startExchange({
          headers: request.headers,
          method: request.method,
          route: pattern,
          path: request.url.split('?', 1)[0]!,
          requestId: request.id,
        });
        if (exchange !== undefined) {
          request.exchangeTrace = exchange;
          const raw = reply.raw;
          raw.on('close', () => exchange.responseEnded(raw.statusCode));
        }
        done();
      });
    });
  }

  // Callback style, one hook for what every request needs: no promise and no extra hook step per request.
  app.addHook(
    'onRequest',
    function identifyRequest(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
      reply.header('x-request-id', request.id);
      // Unmatched paths have no route to carry a measuring hook.
      if (measure !== undefined && request.is404) measure(request, reply, 'unmatched');
      // Answered here (JSON in the path's shape) instead of by Node's bare 400: the server lets such requests in.
      if (unmatched.rejectMissingHost(request, reply)) return;
      done();
    },
  );
  const logger = deps.logger;
  function logRequestLine(request: FastifyRequest, reply: FastifyReply): void {
    // At warn and above the line is not written: skip building it.
    if (!logLevelEnabled(logger, 'info')) return;
    // The path only: a query string may carry a credential. `ip` honours TRUST_PROXY (X-Forwarded-For).
    const path = request.url.split('?', 1)[0];
    // Through the app's logger with the id in the line: the same JSON line the request's child would write
    // (pino puts a child's bindings right where the first fields go), without making that child.
    logger.info(
      {
        reqId: request.id,
        method: request.method,
        url: path,
        ip: request.ip,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
  app.addHook('onResponse', function logRequest(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    logRequestLine(request, reply);
    done();
  });

  app.decorate('outageLog', deps.outages ?? null);
  app.setErrorHandler((error, request, reply) => {
    // No route: its answer is the 404 or 405, whatever its body held (an empty JSON body fails to parse first).
    if (request.is404) return unmatched.answer(request, reply);
    if (clientAbortedUpload(request, error))
      return sendError(reply, clientAbortError(request, error), requestProtocol(request));
    const gatewayError = fromFrameworkError(error);
    logErrorReply(request, gatewayError, error);
    return sendError(reply, gatewayError, requestProtocol(request));
  });

  const shutdown = deps.shutdown;
  registerHealth(app, { checks: deps.readiness ?? [], closing: () => shutdown?.closing === true });
  if (deps.metricsEndpoint !== undefined)
    registerMetricsRoute(app, deps.metricsEndpoint.source, deps.metricsEndpoint.token);
  // Its own encapsulated context: session auth and CSRF there, none of the /v1 API-key hooks (and vice versa).
  const dashboard = deps.dashboard;
  const enforceRateLimit = createRateLimitEnforcer(deps.limiter, deps.tiers, metrics);
  // The playground serves through the same chat route code, pipeline and rate limits as `/v1/chat/completions`.
  const playground = {
    serve: (call: OpenAIChatCall) => serveOpenAIChat(deps.pipeline, call),
    enforceRateLimit,
  };
  if (dashboard !== undefined)
    app.register(async (api) => dashboardApi(api, dashboard, playground), { prefix: '/api' });
  app.register(async (api) => {
    // Before the routes: it attaches its hook to each route as the route is registered.
    registerApiKeyGuard(api, deps.keys, enforceRateLimit);
    registerModelsApi(api, deps.catalog);
    registerAccountApi(api, deps.tiers, {
      billing: deps.billing,
      freeTokensPerDay: deps.freeTokensPerDay,
      tierUpgrades: deps.dashboard?.tierUpgrades,
      ...(deps.now === undefined ? {} : { now: deps.now }),
    });
    registerKeysApi(api, { keys: deps.keys, projects: deps.projects, audit: deps.audit }, deps.now);
    registerAuditApi(api, deps.audit);
    registerBillingApi(api, deps.billing, deps.now, async (accountId) =>
      deps.dashboard?.tierUpgrades.refresh(accountId),
    );
    registerUsageApi(api, { billing: deps.billing, usage: deps.usage }, deps.now);
    registerUsageExportApi(api, deps.usageExport, deps.now);
    registerOpenAIChatRoute(api, deps.pipeline);
    registerAnthropicMessagesRoutes(api, deps.pipeline);
    registerOpenAIResponsesRoutes(api, deps.pipeline, deps.storedResponses);
    registerGeminiGenerateRoutes(api, deps.pipeline, deps.catalog);
  });
  // The dashboard SPA at `/` (index.html for client-side routes; /v1, /api and the probes keep their JSON 404s).
  registerWebApp(app, { root: deps.webRoot });
  return app;
}

/**
 * HTTP or HTTPS server options. `https` changes fastify's server type parameter; the app is used through the
 * same interface either way, hence the loose type here.
 */
function serverTransport(deps: AppDependencies): { http: ServerOptions } {
  const server: ServerOptions = {
    ...(deps.maxHeaderBytes === undefined ? {} : { maxHeaderSize: deps.maxHeaderBytes }),
    ...(deps.headersTimeoutMs === undefined ? {} : { headersTimeout: deps.headersTimeoutMs }),
    // Node checks the two timeouts above only this often (default 30 s): check each second instead.
    connectionsCheckingInterval: 1_000,
    // A request without Host gets a JSON 400 in its path's shape from the app (unmatched-requests.ts), not Node's bare one.
    requireHostHeader: false,
  };
  if (deps.tls === undefined) return { http: server };
  // fastify starts an https.Server instead; its request and reply objects are the same classes as http's.
  return { https: { ...server, cert: deps.tls.cert, key: deps.tls.key } } as unknown as { http: ServerOptions };
}

function trustFirstHops(count: number): (address: string, hop: number) => boolean {
  return function trustHop(_address, hop) {
    return hop < count;
  };
}
