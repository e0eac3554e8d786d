import { usage } from '../api/endpoints';
import { formatCount, formatLatency } from '../lib/format';
import { formatUsd } from '../lib/money';
import { statusWords } from '../lib/request-status';
import { useAsync } from '../lib/use-async';
import { DateTime } from './DateTime';
import { ErrorNotice, Loading } from './Notice';

/** One request, opened from its ledger row: what it used and what it cost. */
export function RequestDetails({ requestId }: { requestId: string }) {
  const { data, error } = useAsync(() => usage.request(requestId), [requestId]);
  const request = data?.request;
  return (
    <section className="card section" aria-labelledby="request-details-heading">
      <h2 id="request-details-heading">Request {requestId}</h2>
      <ErrorNotice error={error} />
      {request === undefined && error === undefined && <Loading />}
      {request !== undefined && (
        <dl className="details">
          <dt>Time</dt>
          <dd>
            <DateTime epochMs={request.createdAt} />
          </dd>
          <dt>Model</dt>
          <dd>
            {request.model}
            {request.stream ? ' (streamed)' : ''}
          </dd>
          <dt>Key</dt>
          <dd>{request.keyName ?? 'Deleted key'}</dd>
          <dt>Tokens</dt>
          <dd>
            {formatCount(request.inputTokens)} in, {formatCount(request.outputTokens)} out
            {request.reasoningTokens > 0 ? ` (${formatCount(request.reasoningTokens)} reasoning)` : ''},{' '}
            {formatCount(request.cacheReadTokens)} cache read, {formatCount(request.cacheWriteTokens)} cache write
            {request.cacheWrite1hTokens > 0 ? ` (${formatCount(request.cacheWrite1hTokens)} for 1h)` : ''}
          </dd>
          <dt>Cost</dt>
          <dd>
            {formatUsd(request.costUsd)}
            {request.unbilledTokens > 0 &&
              `; ${formatCount(request.unbilledTokens)} tokens unbilled (${formatUsd(request.unbilledUsd)})`}
          </dd>
          <dt>Latency</dt>
          <dd>{formatLatency(request.latencyMs)}</dd>
          <dt>Status</dt>
          <dd>
            {statusWords(String(request.status)).label}: {statusWords(String(request.status)).detail}
          </dd>
        </dl>
      )}
    </section>
  );
}
