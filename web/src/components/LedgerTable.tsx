import { billing, receiptUrl } from '../api/endpoints';
import type { LedgerKind } from '../api/types';
import { formatCount } from '../lib/format';
import { Link } from './Link';
import { DateTime } from './DateTime';
import { formatCost, formatUsd, toNano } from '../lib/money';
import { useCursorPages } from '../lib/use-cursor-pages';
import { ErrorNotice, Loading } from './Notice';
import { Pager } from './Pager';

const KIND_LABELS: Record<LedgerKind, string> = {
  topup: 'Top-up',
  usage: 'Usage',
  refund: 'Refund',
  adjustment: 'Adjustment',
  redemption: 'Code',
  tier: 'Tier',
};

const PAGE_SIZE = 25;

/** Payments: each has a printable receipt. */
const RECEIPT_KINDS = new Set<LedgerKind>(['topup', 'redemption', 'tier']);

/** The ledger, newest first, with the balance after each entry (the running balance). */
export function LedgerTable({ refreshKey }: { refreshKey: number }) {
  const pages = useCursorPages((cursor) => billing.ledger(PAGE_SIZE, cursor), [refreshKey]);
  const { page } = pages;
  const entries = page.data?.entries ?? [];
  return (
    <>
      <ErrorNotice error={page.error} />
      {page.loading && page.data === undefined && <Loading />}
      {page.data !== undefined && entries.length === 0 && <p className="muted">No transactions yet.</p>}
      {entries.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Transactions, scrollable">
          <table className="table table-dense table-stack ledger-stack">
            <caption className="visually-hidden">Ledger</caption>
            <thead>
              <tr>
                <th scope="col">Date</th>
                <th scope="col">Type</th>
                <th scope="col">Description</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col" className="num">
                  Balance
                </th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => {
                const credit = toNano(entry.amountUsd) > 0n;
                return (
                  <tr key={entry.id}>
                    <td className="nowrap">
                      <DateTime epochMs={entry.createdAt} />
                    </td>
                    <td className="kind">{KIND_LABELS[entry.kind] ?? entry.kind}</td>
                    <td className="description">
                      {entry.usage !== null ? (
                        <>
                          <span className="ledger-model">{entry.usage.model}</span> ·{' '}
                          {formatCount(entry.usage.inputTokens)} in / {formatCount(entry.usage.outputTokens)} out
                          {entry.usage.cachedTokens > 0 && ` / ${formatCount(entry.usage.cachedTokens)} cached`}
                          {entry.usage.cacheWrite1hTokens > 0 &&
                            ` (${formatCount(entry.usage.cacheWrite1hTokens)} written for 1h)`}
                          {entry.unbilledTokens > 0 &&
                            ` · ${formatCount(entry.unbilledTokens)} unbilled (${formatUsd(entry.unbilledUsd)})`}
                          {entry.usage.keyName !== null && <> · key {entry.usage.keyName}</>} ·{' '}
                          <Link href={`/usage?request=${encodeURIComponent(entry.usage.requestId)}`}>
                            request details
                          </Link>
                        </>
                      ) : (
                        <>
                          {entry.description}
                          {RECEIPT_KINDS.has(entry.kind) && (
                            <>
                              {' · '}
                              <a href={receiptUrl(entry.id)} target="_blank" rel="noopener">
                                receipt<span className="visually-hidden"> (opens in a new tab)</span>
                              </a>
                            </>
                          )}
                        </>
                      )}
                    </td>
                    <td data-label="Amount" className={`num nowrap ${credit ? 'amount-credit' : ''}`}>
                      {credit ? '+' : ''}
                      {formatCost(entry.amountUsd)}
                    </td>
                    <td data-label="Balance" className="num nowrap">
                      {formatUsd(entry.balanceAfterUsd)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Ledger" pages={pages} />
    </>
  );
}
