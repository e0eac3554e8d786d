import { useEffect, useState } from 'react';
import { usage } from '../api/endpoints';
import type { UsageFilter } from '../api/types';
import { ErrorNotice, Loading } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { RecentRequests } from '../components/RecentRequests';
import { RecordsExport } from '../components/RecordsExport';
import { RequestDetails } from '../components/RequestDetails';
import { CentsAmount } from '../components/CentsAmount';
import { StatCard } from '../components/StatCard';
import { UsageChart } from '../components/UsageChart';
import { KeyBreakdown, ModelBreakdown, ProjectBreakdown } from '../components/UsageTables';
import { formatCount } from '../lib/format';
import { sumUsd } from '../lib/money';
import { useAsync } from '../lib/use-async';
import { describeSpan, readUsageQuery, type UsageSpan, writeUsageQuery } from '../lib/usage-query';
import { Notice } from '../components/Notice';
import { UsageRangePicker } from '../components/UsageRangePicker';

/** `?request=req_…` (the ledger's link): that request's details above the page. */
function requestedId(): string | null {
  return new URLSearchParams(window.location.search).get('request');
}

export function UsagePage() {
  const [initial] = useState(() => readUsageQuery(window.location.search));
  const [span, setSpan] = useState<UsageSpan>(initial.span);
  const [requestsPage, setRequestsPage] = useState(initial.page);
  const [refreshKey, setRefreshKey] = useState(0);
  const [filter, setFilter] = useState<UsageFilter>({
    ...(initial.keyId === undefined ? {} : { keyId: initial.keyId }),
    ...(initial.model === undefined ? {} : { model: initial.model }),
    ...(initial.projectId === undefined ? {} : { projectId: initial.projectId }),
  });
  const [ignored, setIgnored] = useState<string[]>(initial.ignored);
  const [requestId] = useState(requestedId);
  const spanKey = JSON.stringify(span);
  const daily = useAsync(
    () => usage.daily(span, filter),
    [spanKey, refreshKey, filter.keyId, filter.model, filter.projectId],
  );
  const data = daily.data;
  // The view in the URL: a link or a reload shows the same range, filters and page of requests.
  // biome-ignore lint/correctness/useExhaustiveDependencies: spanKey stands for span.
  useEffect(() => {
    const search = writeUsageQuery(window.location.search, {
      span,
      keyId: filter.keyId,
      model: filter.model,
      projectId: filter.projectId,
      page: requestsPage,
    });
    if (search !== window.location.search)
      window.history.replaceState(null, '', `${window.location.pathname}${search}`);
  }, [spanKey, filter.keyId, filter.model, filter.projectId, requestsPage]);
  /** A new filter shows its first page of requests. */
  const changeFilter = (change: (current: UsageFilter) => UsageFilter) => {
    setFilter(change);
    setRequestsPage(1);
  };
  // A filter from a hand-edited link that the range does not offer is dropped, and the page says so.
  useEffect(() => {
    if (data === undefined) return;
    const dropped: string[] = [];
    if (filter.model !== undefined && !data.filters.models.includes(filter.model))
      dropped.push(`model “${filter.model}”`);
    if (filter.keyId !== undefined && !data.filters.keys.some((key) => key.keyId === filter.keyId))
      dropped.push(`key “${filter.keyId}”`);
    if (
      filter.projectId !== undefined &&
      !data.filters.projects.some((project) => project.projectId === filter.projectId)
    )
      dropped.push(`project “${filter.projectId}”`);
    if (dropped.length === 0) return;
    setIgnored((current) => [...current, ...dropped]);
    setFilter((current) => ({
      ...(dropped.some((text) => text.startsWith('project')) || current.projectId === undefined
        ? {}
        : { projectId: current.projectId }),
      ...(dropped.some((text) => text.startsWith('key')) || current.keyId === undefined
        ? {}
        : { keyId: current.keyId }),
      ...(dropped.some((text) => text.startsWith('model')) || current.model === undefined
        ? {}
        : { model: current.model }),
    }));
  }, [data, filter.model, filter.keyId, filter.projectId]);
  const totals =
    data === undefined
      ? undefined
      : {
          requests: data.byModel.reduce((sum, row) => sum + row.requests, 0),
          tokens: data.byModel.reduce(
            (sum, row) => sum + row.inputTokens + row.outputTokens + row.cacheReadTokens + row.cacheWriteTokens,
            0,
          ),
          cost: sumUsd(data.byModel.map((row) => row.costUsd)),
        };
  const filterKey = `${filter.keyId ?? ''}|${filter.model ?? ''}|${filter.projectId ?? ''}|${refreshKey}`;
  return (
    <>
      <PageHeader
        title="Usage"
        description="Tokens and cost per day, by model, key and project. Days are UTC."
        actions={
          <>
            <UsageRangePicker span={span} onChange={setSpan} />
            <button
              type="button"
              className="button button-secondary"
              onClick={() => {
                setRefreshKey((value) => value + 1);
                setRequestsPage(1);
              }}
            >
              Refresh
            </button>
            <a className="button button-secondary" href={usage.exportUrl(span, filter)} download>
              Export CSV
            </a>
          </>
        }
      />
      {requestId !== null && <RequestDetails requestId={requestId} />}
      {ignored.length > 0 && (
        <Notice kind="info">The link's {ignored.join(' and ')} could not be shown: showing the default instead.</Notice>
      )}
      {data !== undefined && (
        <div className="filters" role="group" aria-label="Filters">
          <div className="field">
            <label htmlFor="usage-project-filter">Project</label>
            <select
              id="usage-project-filter"
              className="input"
              value={filter.projectId ?? ''}
              onChange={(event) =>
                changeFilter((current) => ({ ...current, projectId: event.target.value || undefined }))
              }
            >
              <option value="">All projects</option>
              {data.filters.projects.map((project) => (
                <option key={project.projectId} value={project.projectId}>
                  {project.projectName}
                  {project.archived ? ' (archived)' : ''}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="usage-key-filter">Key</label>
            <select
              id="usage-key-filter"
              className="input"
              value={filter.keyId ?? ''}
              onChange={(event) => changeFilter((current) => ({ ...current, keyId: event.target.value || undefined }))}
            >
              <option value="">All keys</option>
              {data.filters.keys.map((key) => (
                <option key={key.keyId} value={key.keyId}>
                  {key.keyName ?? 'Deleted key'} {key.hint ?? ''}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="usage-model-filter">Model</label>
            <select
              id="usage-model-filter"
              className="input"
              value={filter.model ?? ''}
              onChange={(event) => changeFilter((current) => ({ ...current, model: event.target.value || undefined }))}
            >
              <option value="">All models</option>
              {data.filters.models.map((model) => (
                <option key={model} value={model}>
                  {model}
                </option>
              ))}
            </select>
          </div>
        </div>
      )}
      <ErrorNotice error={daily.error} />
      {daily.loading && data === undefined && <Loading />}
      {data !== undefined && totals !== undefined && (
        <>
          <div className="stat-grid stat-grid-3">
            <StatCard label={`Spend, ${describeSpan(span)}`} value={<CentsAmount usd={totals.cost} />} />
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
          <section className="card section" aria-labelledby="by-model-heading">
            <h2 id="by-model-heading">By model</h2>
            <ModelBreakdown rows={data.byModel} />
          </section>
          <section className="card section" aria-labelledby="by-project-heading">
            <h2 id="by-project-heading">By project</h2>
            <ProjectBreakdown rows={data.byProject} />
          </section>
          <section className="card section" aria-labelledby="by-key-heading">
            <h2 id="by-key-heading">By key</h2>
            <KeyBreakdown rows={data.byKey} />
          </section>
        </>
      )}
      <section className="card section" aria-labelledby="requests-heading">
        <h2 id="requests-heading">Recent requests</h2>
        <RecentRequests
          key={filterKey}
          refreshKey={refreshKey}
          filter={filter}
          initialPage={requestsPage}
          onPageChange={setRequestsPage}
        />
      </section>
      <section className="card section" aria-labelledby="records-export-heading">
        <h2 id="records-export-heading">Export requests</h2>
        <p className="muted">
          Every request of any days, one row each, with the filters above: the same records as{' '}
          <code>GET /v1/usage/export</code>.
        </p>
        <RecordsExport what="requests" urlOf={(days, format) => usage.recordsExportUrl(days, format, filter)} />
      </section>
    </>
  );
}
