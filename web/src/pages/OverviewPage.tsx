import { lazy, Suspense } from 'react';
import { overview } from '../api/endpoints';
import { AllowanceMeter } from '../components/AllowanceMeter';
import { CentsAmount } from '../components/CentsAmount';
import { CodeTabs } from '../components/CodeTabs';
import { Link } from '../components/Link';
import { ErrorNotice, Loading } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { StatCard } from '../components/StatCard';
import { TierUpgrade } from '../components/TierUpgrade';
import { formatCount } from '../lib/format';
import { formatCost, sumUsd, toNano } from '../lib/money';
import { quickStartSamples } from '../lib/quick-start';
import { useAsync } from '../lib/use-async';
import { useSession } from '../lib/session';

// The chart library loads after the numbers are on screen.
const SpendSparkline = lazy(() =>
  import('../components/SpendSparkline').then((module) => ({ default: module.SpendSparkline })),
);

export function OverviewPage() {
  const { account, refresh } = useSession();
  const { data, error, loading, reload } = useAsync(overview, []);
  return (
    <>
      <PageHeader
        title="Overview"
        description={
          <>
            Signed in as <span className="unbroken">{account.email}</span>
          </>
        }
      />
      <ErrorNotice error={error} />
      {loading && data === undefined && <Loading />}
      {data !== undefined && (
        <>
          <div className="stat-grid">
            <StatCard
              label="Balance"
              value={<CentsAmount usd={data.balanceUsd} />}
              detail={
                toNano(data.reservedUsd) > 0n
                  ? `${formatCost(data.reservedUsd)} held for requests in flight`
                  : 'Prepaid credit'
              }
            >
              <Link href="/billing" className="card-link">
                Add credit →
              </Link>
            </StatCard>
            <StatCard label="Free tokens left today" value={formatCount(data.freeAllowance.leftTokens)}>
              <AllowanceMeter allowance={data.freeAllowance} />
            </StatCard>
            <StatCard
              label="Today"
              value={<CentsAmount usd={data.today.costUsd} />}
              detail={`${formatCount(data.today.requests)} requests · ${formatCount(data.today.tokens)} tokens`}
            />
            <StatCard
              label="This month"
              value={<CentsAmount usd={data.month.costUsd} />}
              detail={`${formatCount(data.month.requests)} requests · ${formatCount(data.month.tokens)} tokens`}
            />
          </div>

          <section className="card section" aria-labelledby="spend-heading">
            <div className="section-head">
              <h2 id="spend-heading">Spend, last 30 days</h2>
              <span className="muted">
                <CentsAmount usd={sumUsd(data.spend30d.map((day) => day.costUsd))} /> total
              </span>
            </div>
            {data.spend30d.every((day) => toNano(day.costUsd) === 0n) ? (
              <p className="muted sparkline-empty">
                No paid usage in the last 30 days (free-allowance tokens cost nothing).
              </p>
            ) : (
              <Suspense fallback={<div className="sparkline-placeholder" />}>
                <SpendSparkline days={data.spend30d} />
              </Suspense>
            )}
            <Link href="/usage" className="card-link">
              See usage details →
            </Link>
          </section>

          <section className="card section" aria-labelledby="quick-start-heading">
            <h2 id="quick-start-heading">Quick start</h2>
            <p className="muted">
              Create a key on the <Link href="/keys">API keys</Link> page, put it in the <code>TOLLGATE_API_KEY</code>{' '}
              environment variable, and call the gateway with the official OpenAI or Anthropic SDK. Base URL:{' '}
              <code>{data.baseUrl}/v1</code>
            </p>
            <CodeTabs label="Quick start language" samples={quickStartSamples(data.baseUrl)} />
          </section>

          <section className="card section" aria-labelledby="tier-heading">
            <div className="section-head">
              <h2 id="tier-heading">Rate limits</h2>
              <span className="badge badge-blue">{data.tier.name} tier</span>
            </div>
            <TierUpgrade
              onChanged={() => {
                reload();
                refresh();
              }}
            />
          </section>
        </>
      )}
    </>
  );
}
