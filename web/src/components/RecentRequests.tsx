import { useEffect } from 'react';
import { usage } from '../api/endpoints';
import type { UsageFilter } from '../api/types';
import { formatCount, formatLatency } from '../lib/format';
import { formatUsd } from '../lib/money';
import { useCursorPages } from '../lib/use-cursor-pages';
import { ErrorNotice, Loading } from './Notice';
import { Pager } from './Pager';
import { DateTime } from './DateTime';
import { RequestStatus } from './RequestStatus';

const PAGE_SIZE = 25;

/** The newest requests first, one page at a time (cursor pagination; earlier cursors kept for "Previous"). */
export function RecentRequests({
  refreshKey,
  filter = {},
  initialPage = 1,
  onPageChange,
}: {
  refreshKey: number;
  filter?: UsageFilter;
  /** The page to open on (1 for the first), e.g. from the URL. */
  initialPage?: number;
  /** Told the page shown (1 for the first) once it is the one asked for. */
  onPageChange?: (page: number) => void;
}) {
  const pages = useCursorPages((cursor) => usage.requests(PAGE_SIZE, cursor, filter), [refreshKey], initialPage - 1);
  const { page, index, seeking } = pages;
  useEffect(() => {
    if (!seeking) onPageChange?.(index + 1);
  }, [index, seeking, onPageChange]);
  // While paging ahead to a linked page, the pages passed on the way are not shown.
  const requests = seeking ? [] : (page.data?.requests ?? []);
  return (
    <>
      <ErrorNotice error={page.error} />
      {((page.loading && page.data === undefined) || seeking) && <Loading />}
      {!seeking && page.data !== undefined && requests.length === 0 && pages.index === 0 && (
        <p className="muted">No requests yet. Calls made with your keys appear here within seconds.</p>
      )}
      {requests.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Recent requests, scrollable">
          <table className="table table-dense table-stack">
            <caption className="visually-hidden">Recent requests</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Model</th>
                <th scope="col">Key</th>
                <th scope="col" className="num">
                  In
                </th>
                <th scope="col" className="num">
                  Out
                </th>
                <th scope="col" className="num">
                  Cached
                </th>
                <th scope="col" className="num">
                  Cost
                </th>
                <th scope="col" className="num">
                  Latency
                </th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {requests.map((request) => (
                <tr key={request.requestId} title={request.requestId}>
                  <td className="nowrap">
                    <DateTime epochMs={request.createdAt} />
                  </td>
                  <td className="nowrap">
                    {request.model}
                    {request.stream && <span className="muted small"> · stream</span>}
                  </td>
                  <td data-label="Key" className="key-name">
                    {request.keyName}
                  </td>
                  <td data-label="In" className="num">
                    {formatCount(request.inputTokens)}
                  </td>
                  <td data-label="Out" className="num">
                    {formatCount(request.outputTokens)}
                  </td>
                  <td data-label="Cached" className="num">
                    {formatCount(request.cacheReadTokens + request.cacheWriteTokens)}
                  </td>
                  <td data-label="Cost" className="num">
                    {formatUsd(request.costUsd)}
                  </td>
                  <td data-label="Latency" className="num nowrap">
                    {formatLatency(request.latencyMs)}
                  </td>
                  <td data-label="Status">
                    <RequestStatus status={String(request.status)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!seeking && <Pager label="Recent requests" pages={pages} />}
    </>
  );
}
