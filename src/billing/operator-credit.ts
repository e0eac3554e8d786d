import { randomUUID } from 'node:crypto';
import { invalidRequest } from '../canonical/errors.js';
import type { BillingRepository } from '../storage/billing-types.js';
import type { NanoUsd } from './money.js';

/**
 * An operator's top-up of an account (CLI `tollgate credit` and the dashboard's operator view): a `topup` ledger
 * entry with its own idempotency key, so each call credits once.
 */
export async function creditAccount(
  billing: BillingRepository,
  accountId: string,
  amountNano: NanoUsd,
  note: string | null,
  at: number,
): Promise<{ balanceNano: NanoUsd }> {
  if (amountNano <= 0n) throw invalidRequest('A credit must be more than 0 USD.', 'amountUsd');
  const result = await billing.credit({
    accountId,
    kind: 'topup',
    amountNano,
    idempotencyKey: `topup:${randomUUID()}`,
    note,
    at,
  });
  return { balanceNano: result.balanceNano };
}
