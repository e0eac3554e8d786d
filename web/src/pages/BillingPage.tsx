import { useEffect, useState } from 'react';
import { billing } from '../api/endpoints';
import { AllowanceMeter } from '../components/AllowanceMeter';
import { BillingDetailsForm } from '../components/BillingDetailsForm';
import { LedgerTable } from '../components/LedgerTable';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { RecordsExport } from '../components/RecordsExport';
import { RedeemForm } from '../components/RedeemForm';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { CentsAmount } from '../components/CentsAmount';
import { StatCard } from '../components/StatCard';
import { TopUpForm } from '../components/TopUpForm';
import { formatCount } from '../lib/format';
import { formatCost, toNano } from '../lib/money';
import { useAsync } from '../lib/use-async';
import { withInlineCode } from '../lib/inline-code';

/** Stripe sends the browser back to /billing?checkout=success|cancelled. */
function useCheckoutReturn(): 'success' | 'cancelled' | null {
  const [state] = useState<'success' | 'cancelled' | null>(() => {
    const value = new URLSearchParams(window.location.search).get('checkout');
    return value === 'success' || value === 'cancelled' ? value : null;
  });
  useEffect(() => {
    if (state !== null) window.history.replaceState(null, '', '/billing');
  }, [state]);
  return state;
}

export function BillingPage() {
  const { current } = useOrganisation();
  const canPay = useCan('billing:manage');
  const canReadLedger = useCan('billing:read');
  const [refreshKey, setRefreshKey] = useState(0);
  const summary = useAsync(billing.get, [refreshKey]);
  const checkout = useCheckoutReturn();
  const data = summary.data;
  const refresh = () => setRefreshKey((value) => value + 1);
  return (
    <>
      <PageHeader
        title="Billing"
        description="Prepaid credit: requests are charged from your balance after the daily free tokens are used."
      />
      {checkout === 'success' && (
        <Notice kind="success">
          Payment received. Your balance updates as soon as Stripe confirms it (usually a few seconds).
        </Notice>
      )}
      {checkout === 'cancelled' && <Notice kind="info">Checkout was cancelled; nothing was charged.</Notice>}
      <ErrorNotice error={summary.error} />
      {summary.loading && data === undefined && <Loading />}
      {data !== undefined && (
        <>
          <div className="stat-grid stat-grid-2">
            <StatCard
              label="Credit balance"
              value={<CentsAmount usd={data.balanceUsd} testId="balance" />}
              detail={
                toNano(data.reservedUsd) > 0n
                  ? `${formatCost(data.reservedUsd)} held for requests in flight`
                  : 'Available for requests'
              }
            />
            <StatCard label="Free tokens today" value={`${formatCount(data.freeAllowance.leftTokens)} left`}>
              <AllowanceMeter allowance={data.freeAllowance} />
            </StatCard>
          </div>
          <div className="two-columns">
            <section className="card section" aria-labelledby="topup-heading">
              <h2 id="topup-heading">Add credit</h2>
              {!canPay ? (
                <p className="muted">{roleReason(current?.role, 'adding credit')}</p>
              ) : data.stripe.enabled ? (
                <TopUpForm stripe={data.stripe} />
              ) : (
                <>
                  <p className="muted">Card payments are not enabled on this gateway. {data.creditHint}</p>
                  {data.operatorHint !== null && <p className="operator-hint">{withInlineCode(data.operatorHint)}</p>}
                </>
              )}
            </section>
            <section className="card section" aria-labelledby="redeem-heading">
              <h2 id="redeem-heading">Redeem a code</h2>
              <p className="muted">Have a prepaid code from the operator? Enter it to add its value to your balance.</p>
              {canPay ? (
                <RedeemForm onRedeemed={refresh} />
              ) : (
                <p className="muted">{roleReason(current?.role, 'redeeming codes')}</p>
              )}
            </section>
          </div>
        </>
      )}
      <section className="card section" aria-labelledby="billing-details-heading">
        <h2 id="billing-details-heading">Billing details</h2>
        <p className="muted">The name and address printed on your receipts.</p>
        <BillingDetailsForm />
      </section>
      <section className="card section" aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Transactions</h2>
        {canReadLedger ? (
          <>
            <LedgerTable refreshKey={refreshKey} />
            <h3>Export transactions</h3>
            <RecordsExport what="transactions" urlOf={billing.ledgerExportUrl} />
          </>
        ) : (
          <p className="muted">{roleReason(current?.role, 'seeing the transactions')}</p>
        )}
      </section>
    </>
  );
}
