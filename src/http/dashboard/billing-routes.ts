import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { GatewayError } from '../../canonical/errors.js';
import { formatUsd } from '../../billing/money.js';
import { redeemCode } from '../../billing/redemption-codes.js';
import { STRIPE_MAXIMUM_USD, STRIPE_MINIMUM_USD, StripeTopups } from '../../billing/stripe-topups.js';
import { pageLimit } from '../../protocols/shared/query-params.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { DashboardError } from './dashboard-error.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { byPerson } from './audit-actor.js';
import { publicBaseUrl } from './overview-routes.js';
import { NO_MONEY, presentFreeAllowance, presentLedgerEntry, type LedgerUsageDetail } from './presenters.js';

const ledgerQuery = z.object({ limit: pageLimit(200, 50), cursor: z.string().min(1).max(100).optional() });
const redeemBody = z
  .object({
    code: z
      .string()
      .trim()
      .min(1, 'Enter a code.')
      .max(100, 'This code is not valid: codes are at most 100 characters.'),
  })
  .strict();
const checkoutBody = z.object({ amountUsd: z.string().max(30) }).strict();

const READ = { config: { permission: 'organisation:read' } } as const;
/** Money in: top-ups and codes. */
const PAY = { config: { permission: 'billing:manage' } } as const;

/** What a user is told when card payments are off: words for them, not the operator's commands. */
export const USER_CREDIT_HINT =
  'Ask the operator of this gateway for credit or for a prepaid code, and redeem the code here.';

/** Shown to operators only (role admin) on the billing page when Stripe is not configured. */
export const OPERATOR_HINT =
  'An operator credits accounts from the operator view (Accounts → Credit) or on the server with ' +
  '`tollgate credit --email <email> --usd <amount>`, and can mint prepaid redemption codes ' +
  '(`tollgate codes create --usd <amount> --count <n>`) that users redeem here. ' +
  'Card top-ups through Stripe Checkout are available when the gateway runs with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET.';

/** Balance, free allowance, ledger, redemption codes and Stripe Checkout. */
export function registerBillingRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  // The balance is on every member's overview; the ledger and spending need their own permissions.
  api.get('/billing', READ, async (request) => {
    const account = currentAccount(request);
    const money = (await deps.billing.balance(currentOrganisation(request).organisation.id)) ?? NO_MONEY;
    return {
      balanceUsd: formatUsd(money.balanceNano),
      reservedUsd: formatUsd(money.reservedNano),
      freeAllowance: presentFreeAllowance(money, deps.freeTokensPerDay, deps.now()),
      stripe: { enabled: deps.stripe !== undefined, minimumUsd: STRIPE_MINIMUM_USD, maximumUsd: STRIPE_MAXIMUM_USD },
      // CLI commands and environment variables are for operators; a user reads what they can do.
      operatorHint: account.role === 'admin' ? OPERATOR_HINT : null,
      creditHint: USER_CREDIT_HINT,
    };
  });

  api.get('/billing/ledger', { config: { permission: 'billing:read' } }, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { limit, cursor } = parseInput(ledgerQuery, request.query);
    // The cursor is the id of the last entry shown: ids sort by time, so "older than it" is a plain comparison.
    const entries = await deps.billing.ledger(organisationId, limit + 1, cursor);
    const page = entries.slice(0, limit);
    // Usage rows say what was used: the model, tokens in and out, and the key, from the request's usage record.
    const requestIds = page.flatMap((entry) =>
      entry.kind === 'usage' && entry.requestId !== null ? [entry.requestId] : [],
    );
    const [records, keys] =
      requestIds.length === 0
        ? [[], []]
        : await Promise.all([deps.usage.findByRequestIds(organisationId, requestIds), deps.keys.list(organisationId)]);
    const keyNames = new Map(keys.map((key) => [key.id, key.name]));
    const details = new Map<string, LedgerUsageDetail>(
      records.map((record) => [
        record.requestId,
        {
          requestId: record.requestId,
          model: record.model,
          inputTokens: record.inputTokens,
          outputTokens: record.outputTokens,
          cachedTokens: record.cacheReadTokens + record.cacheWriteTokens,
          cacheReadTokens: record.cacheReadTokens,
          cacheWriteTokens: record.cacheWriteTokens,
          cacheWrite1hTokens: record.cacheWrite1hTokens,
          keyName: keyNames.get(record.apiKeyId) ?? null,
        },
      ]),
    );
    return {
      entries: page.map((entry) =>
        presentLedgerEntry(entry, entry.requestId === null ? undefined : details.get(entry.requestId)),
      ),
      nextCursor: entries.length > limit ? page[page.length - 1]!.id : null,
    };
  });

  api.post('/billing/redeem', PAY, async (request) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const { code } = parseInput(redeemBody, request.body);
    try {
      const redemption = await redeemCode(deps.billing, code, organisationId, deps.now());
      await deps.audit.record({
        organisationId,
        ...byPerson(request),
        action: 'money.redeem',
        after: { amountNanoUsd: redemption.amountNano, balanceNanoUsd: redemption.balanceNano },
      });
      // Payments may reach a tier (e.g. $50 in total → pro): from the next request on.
      await deps.tierUpgrades.refresh(organisationId);
      return { creditedUsd: formatUsd(redemption.amountNano), balanceUsd: formatUsd(redemption.balanceNano) };
    } catch (error) {
      // Unknown, used, expired or malformed: one answer, so the form cannot be used to probe codes.
      if (error instanceof GatewayError && error.status < 500) {
        throw new DashboardError(
          400,
          'invalid_code',
          'This code is not valid: it is unknown, expired or already used.',
          'code',
        );
      }
      throw error;
    }
  });

  api.post('/billing/checkout', PAY, async (request) => {
    const account = currentAccount(request);
    const organisationId = currentOrganisation(request).organisation.id;
    const { amountUsd } = parseInput(checkoutBody, request.body);
    if (deps.stripe === undefined) {
      throw new DashboardError(
        400,
        'stripe_not_configured',
        `Card top-ups are not enabled on this gateway. ${account.role === 'admin' ? OPERATOR_HINT : USER_CREDIT_HINT}`,
      );
    }
    const amount = StripeTopups.parseAmount(amountUsd);
    // The organisation is paid into; the paying person gets Stripe's receipt.
    const payer = { organisationId, email: account.email };
    return { url: await deps.stripe.createCheckout(payer, amount, publicBaseUrl(request, deps.publicBaseUrl)) };
  });
}
