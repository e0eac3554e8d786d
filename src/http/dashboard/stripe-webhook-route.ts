import type { FastifyInstance } from 'fastify';
import { formatUsd } from '../../billing/money.js';
import { StripeSignatureError, type WebhookOutcome } from '../../billing/stripe-topups.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { DashboardError } from './dashboard-error.js';

/**
 * `POST /api/stripe/webhook`, in its own encapsulated plugin so that only here the body is read raw (a Buffer):
 * the signature is over the exact bytes Stripe sent, which re-serialised JSON would not reproduce.
 * No session and no CSRF token: the signature is the authentication.
 */
export async function stripeWebhookPlugin(api: FastifyInstance, deps: DashboardDependencies): Promise<void> {
  api.removeAllContentTypeParsers();
  api.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  api.post('/stripe/webhook', { config: { access: 'public', skipCsrf: true } }, async (request) => {
    if (deps.stripe === undefined)
      throw new DashboardError(400, 'stripe_not_configured', 'Stripe is not configured on this gateway.');
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const header = request.headers['stripe-signature'];
    let outcome: WebhookOutcome;
    try {
      outcome = await deps.stripe.handleWebhook(body, Array.isArray(header) ? header[0] : header);
    } catch (error) {
      if (error instanceof StripeSignatureError) {
        request.log.warn({ reason: error.message }, 'Stripe webhook refused: bad signature');
        throw new DashboardError(400, 'invalid_signature', 'The webhook signature does not verify.');
      }
      throw error;
    }
    if (outcome.result === 'credited') {
      request.log.info(
        { accountId: outcome.accountId, amountUsd: formatUsd(outcome.amountNano) },
        'Stripe top-up credited',
      );
      await deps.audit.record({
        organisationId: outcome.accountId,
        actor: { type: 'system', name: 'stripe' },
        ip: request.ip,
        action: 'money.topup',
        target: { type: 'stripe_checkout_session', id: outcome.checkoutSessionId },
        after: { amountNanoUsd: outcome.amountNano, balanceNanoUsd: outcome.balanceNano },
      });
      await deps.tierUpgrades.refresh(outcome.accountId);
    } else if (outcome.result === 'unknown_account') {
      // Acknowledged (Stripe would retry a failure for days) but logged: money arrived for no account here.
      request.log.error({ accountId: outcome.accountId }, 'Stripe top-up for an unknown account: nothing credited');
    }
    return { received: true, result: outcome.result };
  });
}
