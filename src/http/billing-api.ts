import { presentLedgerEntry } from '../billing/present-ledger-entry.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatUsd } from '../billing/money.js';
import { redeemCode } from '../billing/redemption-codes.js';
import { validationError } from '../protocols/shared/format-validation-error.js';
import type { BillingRepository, LedgerEntry } from '../storage/billing-types.js';
import { pageLimit } from '../protocols/shared/query-params.js';

const redeemBody = z.object({ code: z.string().trim().min(1).max(100) }).strict();

const ledgerQuery = z.object({
  limit: pageLimit(100, 20),
  /** A ledger entry id from a previous page: entries older than it. */
  before: z.string().min(1).max(100).optional(),
});

/** `POST /v1/account/redeem` and `GET /v1/account/ledger`: the account's own money, by API key. */
export function registerBillingApi(
  app: FastifyInstance,
  billing: BillingRepository,
  now: () => number = Date.now,
  /** After a credit (payments may reach a tier by total paid). */
  afterCredit: (accountId: string) => Promise<unknown> = async () => undefined,
): void {
  app.post('/v1/account/redeem', { config: { scope: 'account:redeem' } }, async (request) => {
    const parsed = redeemBody.safeParse(request.body ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const redemption = await redeemCode(billing, parsed.data.code, request.auth!.organisation.id, now());
    await afterCredit(request.auth!.organisation.id);
    return {
      object: 'redemption',
      amount_usd: formatUsd(redemption.amountNano),
      amount_nano_usd: redemption.amountNano.toString(),
      balance_usd: formatUsd(redemption.balanceNano),
      balance_nano_usd: redemption.balanceNano.toString(),
    };
  });

  app.get('/v1/account/ledger', { config: { scope: 'usage:read' } }, async (request) => {
    const parsed = ledgerQuery.safeParse(request.query ?? {}, { reportInput: true });
    if (!parsed.success) throw validationError(parsed.error);
    const { limit, before } = parsed.data;
    // One more than asked tells whether another page exists.
    const entries = await billing.ledger(request.auth!.organisation.id, limit + 1, before);
    const page = entries.slice(0, limit);
    const hasMore = entries.length > limit;
    return {
      object: 'list',
      data: page.map(presentLedgerEntry),
      has_more: hasMore,
      next_before: hasMore ? page[page.length - 1]!.id : null,
    };
  });
}
