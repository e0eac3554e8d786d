import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import { registerAdminRoutes } from './admin-routes.js';
import { registerCatalogRoutes } from './catalog-routes.js';
import { registerAlertRoutes } from './alert-routes.js';
import { registerAuditRoutes } from './audit-routes.js';
import { registerAuthRoutes } from './auth-routes.js';
import { registerBillingRoutes } from './billing-routes.js';
import { acceptJsonOrEmpty } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound, sendDashboardError } from './dashboard-error.js';
import { createDashboardSessionHook } from './dashboard-session.js';
import { registerIdentityRoutes, registerOperatorIdentityRoutes } from './identity-routes.js';
import { registerSignInMethodRoutes } from './sign-in-method-routes.js';
import { registerInvitationRoutes } from './invitation-routes.js';
import { registerKeysRoutes } from './keys-routes.js';
import { registerMemberRoutes } from './member-routes.js';
import { registerSignInPolicyRoutes } from './sign-in-policy-routes.js';
import { registerModelsRoutes } from './models-routes.js';
import { registerOrganisationRoutes } from './organisation-routes.js';
import { registerOverviewRoutes } from './overview-routes.js';
import { registerProjectRoutes } from './project-routes.js';
import { registerLimitRoutes } from './limit-routes.js';
import { type PlaygroundServices, registerPlaygroundRoutes } from './playground-routes.js';
import { registerReceiptRoutes } from './receipt-routes.js';
import { registerStandingRoutes } from './standing-routes.js';
import { stripeWebhookPlugin } from './stripe-webhook-route.js';
import { registerTierRoutes } from './tier-routes.js';
import { registerUsageRoutes } from './usage-routes.js';
import { registerUsageExportRoute } from './usage-export-route.js';
import { registerLedgerExportRoute } from './ledger-export-route.js';

/**
 * The dashboard's JSON API (docs/dashboard-api.md). Register it in its own encapsulated context under `/api`:
 * its session cookie, CSRF check, body parsing and error shape apply here only, and the `/v1` API-key hook
 * does not. `playground` (the `/v1` chat serving and rate limits) adds the playground's route.
 */
export async function dashboardApi(
  api: FastifyInstance,
  deps: DashboardDependencies,
  playground?: PlaygroundServices,
): Promise<void> {
  await api.register(fastifyCookie);
  api.decorateRequest('dashboard', null);
  acceptJsonOrEmpty(api);
  api.setErrorHandler((error, request, reply) => sendDashboardError(request, reply, error));
  api.setNotFoundHandler((request, reply) =>
    sendDashboardError(request, reply, notFound(`No route for ${request.method} ${request.url.split('?')[0]}.`)),
  );
  api.addHook(
    'onRequest',
    createDashboardSessionHook(deps.sessions, {
      hasSecondFactor: async (accountId) => (await deps.signInMethods.secondFactors(accountId)).length > 0,
      providerName: (id) => deps.signInMethods.sso.list().find((provider) => provider.id === id)?.name ?? id,
    }),
  );
  // Account data must not linger in shared or browser caches.
  api.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });

  registerAuthRoutes(api, deps);
  registerIdentityRoutes(api, deps);
  registerSignInMethodRoutes(api, deps);
  registerOperatorIdentityRoutes(api, deps);
  registerOrganisationRoutes(api, deps);
  registerMemberRoutes(api, deps);
  registerSignInPolicyRoutes(api, deps);
  registerInvitationRoutes(api, deps);
  registerOverviewRoutes(api, deps);
  registerStandingRoutes(api, deps);
  registerProjectRoutes(api, deps);
  registerLimitRoutes(api, deps);
  registerKeysRoutes(api, deps);
  registerModelsRoutes(api, deps);
  if (playground !== undefined) registerPlaygroundRoutes(api, deps, playground);
  registerUsageRoutes(api, deps);
  registerUsageExportRoute(api, deps);
  registerLedgerExportRoute(api, deps);
  registerBillingRoutes(api, deps);
  registerTierRoutes(api, deps);
  registerAlertRoutes(api, deps);
  registerAdminRoutes(api, deps);
  registerCatalogRoutes(api, deps);
  registerAuditRoutes(api, deps);
  registerReceiptRoutes(api, deps);
  await api.register(stripeWebhookPlugin, deps);
  // A catch-all of our own: the SPA's wildcard route at `/` would otherwise take unknown /api GETs, and its
  // 404 is in the /v1 shape.
  api.all('/*', { config: { access: 'public', skipCsrf: true } }, async (request) => {
    throw notFound(`No route for ${request.method} ${request.url.split('?')[0]}.`);
  });
}
