import { useEffect, useRef } from 'react';
import { usage } from '../api/endpoints';
import { formatCount, formatDateTime, formatLatency } from '../lib/format';
import { formatCost } from '../lib/money';
import { useCursorPages } from '../lib/use-cursor-pages';
import { ErrorNotice, Loading } from './Notice';
import { Pager } from './Pager';
import { StatusBadge } from './StatusBadge';

const PAGE_SIZE = 25;

/** The newest requests first, one page at a time (cursor pagination; earlier cursors kept for "Previous"). */
export function RecentRequests({ refreshKey, keyId = null }: { refreshKey: number; keyId?: string | null }) {
  const pages = useCursorPages((cursor) => usage.requests(PAGE_SIZE, cursor, keyId), [refreshKey, keyId]);
  const { restart } = pages;
  const shownKey = useRef(keyId);
  // Another key: back to its newest page (`restart` is a new function each render: only the key is a dependency).
  useEffect(() => {
    if (shownKey.current === keyId) return;
    shownKey.current = keyId;
    restart();
  }, [keyId]);
  const { page } = pages;
  const requests = page.data?.requests ?? [];
  return (
    <>
      <ErrorNotice error={page.error} />
      {page.loading && page.data === undefined && <Loading />}
      {page.data !== undefined && requests.length === 0 && pages.index === 0 && <p className="muted">No requests yet. Calls made with your keys appear here within seconds.</p>}
      {requests.length > 0 && (
        <div className="table-wrap">
          <table className="table table-dense table-stack">
            <caption className="visually-hidden">Recent requests</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Model</th>
                <th scope="col">Key</th>
                <th scope="col" className="num">In</th>
                <th scope="col" className="num">Out</th>
                <th scope="col" className="num">Cached</th>
                <th scope="col" className="num">Cost</th>
                <th scope="col" className="num">Latency</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {requests.map((request) => (
                <tr key={request.requestId} title={request.requestId}>
                  <td className="nowrap">{formatDateTime(request.createdAt)}</td>
                  <td className="nowrap">
                    {request.model}
                    {request.stream && <span className="muted small"> · stream</span>}
                  </td>
                  <td data-label="Key" className="nowrap">
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
                    {formatCost(request.costUsd)}
                  </td>
                  <td data-label="Latency" className="num nowrap">
                    {formatLatency(request.latencyMs)}
                  </td>
                  <td>
                    <StatusBadge status={String(request.status) === 'ok' ? 'ok' : 'error'} label={String(request.status)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Recent requests" pages={pages} />
    </>
  );
}
