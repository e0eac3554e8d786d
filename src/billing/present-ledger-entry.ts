import type { LedgerEntry } from '../storage/billing-types.js';
import { formatUsd } from './money.js';

/** A ledger entry as the HTTP API and the CLI show it: USD as exact decimal strings, nano-USD as integer strings. */
export function presentLedgerEntry(entry: LedgerEntry) {
  return {
    id: entry.id,
    object: 'ledger_entry',
    kind: entry.kind,
    amount_usd: formatUsd(entry.amountNano),
    amount_nano_usd: entry.amountNano.toString(),
    balance_after_usd: formatUsd(entry.balanceAfterNano),
    balance_after_nano_usd: entry.balanceAfterNano.toString(),
    request_id: entry.requestId,
    note: entry.note,
    // A usage line: reported tokens the settlement could not charge, and their cost at list price.
    unbilled_tokens: entry.unbilledTokens,
    unbilled_cost_usd: formatUsd(entry.unbilledNano),
    unbilled_cost_nano_usd: entry.unbilledNano.toString(),
    // A usage line: the vendor-run tools its request used, and their cost (a part of `amount_usd`).
    web_search_requests: entry.webSearchRequests,
    web_fetch_requests: entry.webFetchRequests,
    server_tool_cost_usd: formatUsd(entry.serverToolNano),
    server_tool_cost_nano_usd: entry.serverToolNano.toString(),
    created_at: new Date(entry.createdAt).toISOString(),
  };
}
