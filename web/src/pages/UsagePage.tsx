import { useState } from 'react';
import { usage, type UsageRange } from '../api/endpoints';
import { ErrorNotice, Loading } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { KeyFilter } from '../components/keys/KeyFilter';
import { RecentRequests } from '../components/RecentRequests';
import { SegmentedControl } from '../components/SegmentedControl';
import { StatCard } from '../components/StatCard';
import { UsageChart } from '../components/UsageChart';
import { KeyBreakdown, ModelBreakdown } from '../components/UsageTables';
import { formatCount } from '../lib/format';
import { formatCost, sumUsd } from '../lib/money';
import { useAsync } from '../lib/use-async';

const RANGES: { value: UsageRange; label: string }[] = [
  { value: 7, label: '7 days' },
  { value: 30, label: '30 days' },
  { value: 90, label: '90 days' },
];

export function UsagePage() {
  const [range, setRange] = useState<UsageRange>(30);
  const [refreshKey, setRefreshKey] = useState(0);
  const [keyId, setKeyId] = useState<string | null>(null);
  const daily = useAsync(() => usage.daily(range, keyId), [range, refreshKey, keyId]);
  const data = daily.data;
  const totals =
    data === undefined
      ? undefined
      : {
          requests: data.byModel.reduce((sum, row) => sum + row.requests, 0),
          tokens: data.byModel.reduce((sum, row) => sum + row.inputTokens + row.outputTokens + row.cacheReadTokens + row.cacheWriteTokens, 0),
          cost: sumUsd(data.byModel.map((row) => row.costUsd)),
        };
  return (
    <>
      <PageHeader
        title="Usage"
        description="Tokens and cost per day, by model and by key. Days are UTC."
        actions={
          <>
            <SegmentedControl label="Range" options={RANGES} value={range} onChange={setRange} />
            <KeyFilter value={keyId} onChange={setKeyId} />
            <button type="button" className="button button-secondary" onClick={() => setRefreshKey((value) => value + 1)}>
              Refresh
            </button>
            <a className="button button-secondary" href={usage.exportUrl(range, keyId)} download>
              Export CSV
            </a>
          </>
        }
      />
      <ErrorNotice error={daily.error} />
      {daily.loading && data === undefined && <Loading />}
      {data !== undefined && totals !== undefined && (
        <>
          <div className="stat-grid stat-grid-3">
            <StatCard label={`Spend, last ${range} days`} value={formatCost(totals.cost)} />
            <StatCard label="Requests" value={formatCount(totals.requests)} />
            <StatCard label="Tokens" value={formatCount(totals.tokens)} />
          </div>
          <section className="card section" aria-labelledby="cost-chart-heading">
            <h2 id="cost-chart-heading">Cost per day</h2>
            <UsageChart usage={data} metric="cost" />
          </section>
          <section className="card section" aria-labelledby="token-chart-heading">
            <h2 id="token-chart-heading">Tokens per day</h2>
            <UsageChart usage={data} metric="tokens" />
          </section>
          <div className="two-columns">
            <section className="card section" aria-labelledby="by-model-heading">
              <h2 id="by-model-heading">By model</h2>
              <ModelBreakdown rows={data.byModel} />
            </section>
            <section className="card section" aria-labelledby="by-key-heading">
              <h2 id="by-key-heading">By key</h2>
              <KeyBreakdown rows={data.byKey} />
            </section>
          </div>
        </>
      )}
      <section className="card section" aria-labelledby="requests-heading">
        <h2 id="requests-heading">Recent requests</h2>
        <RecentRequests refreshKey={refreshKey} keyId={keyId} />
      </section>
    </>
  );
}
