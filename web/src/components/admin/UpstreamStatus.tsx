import { ApiError } from '../../api/client';
import type { UpstreamCredential } from '../../api/types';
import { admin } from '../../api/endpoints';
import { formatRelative } from '../../lib/format';
import { useAsync } from '../../lib/use-async';
import { ErrorNotice, Loading } from '../Notice';
import { StatusBadge } from '../StatusBadge';

/**
 * A credential's share of its vendor's attempts since start (of its deployment group's, for deployments), and of
 * those how many failed: what the weights produced, beside the weights themselves.
 */
function shareOf(credential: UpstreamCredential, all: readonly UpstreamCredential[]): string {
  const peers = all.filter(
    (other) => other.vendor === credential.vendor && (other.deployment === null) === (credential.deployment === null),
  );
  const total = peers.reduce((sum, other) => sum + other.attempts, 0);
  if (total === 0) return '—';
  const failed = credential.failures === 0 ? '' : ` (${credential.failures} failed)`;
  return `${Math.round((credential.attempts / total) * 100)}%${failed}`;
}

/** Upstream credentials and their health; older gateways have no such endpoint (404) and say so. */
export function UpstreamStatus() {
  const state = useAsync(admin.upstreams, []);
  if (state.error instanceof ApiError && state.error.status === 404)
    return <p className="muted">Upstream status is not available on this gateway.</p>;
  if (state.error !== undefined) return <ErrorNotice error={state.error} />;
  if (state.data === undefined) return <Loading />;
  const credentials = state.data.credentials;
  if (credentials.length === 0)
    return (
      <p className="muted">
        No upstream credentials are configured (demo mode serves every model from the built-in simulator).
      </p>
    );
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Upstream credentials, scrollable">
      <table className="table table-dense table-stack">
        <caption className="visually-hidden">Upstream credentials</caption>
        <thead>
          <tr>
            <th scope="col">Vendor</th>
            <th scope="col">Credential</th>
            <th scope="col">Base URL</th>
            <th scope="col">State</th>
            <th scope="col" className="num">
              Recent failures
            </th>
            <th scope="col" className="num">
              Weight
            </th>
            <th scope="col" className="num">
              Share
            </th>
            <th scope="col" className="num">
              Mean latency
            </th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          {credentials.map((credential) => (
            <tr key={`${credential.vendor}/${credential.label}`}>
              <th scope="row">{credential.vendor}</th>
              <td data-label="Credential">{credential.label}</td>
              <td data-label="Base URL" className="mono small break">
                {credential.baseUrl}
              </td>
              <td data-label="State">
                <StatusBadge status={credential.state} />
                {credential.state === 'cooling_down' && credential.coolingDownUntil !== null && (
                  <span className="muted small"> until {formatRelative(credential.coolingDownUntil)}</span>
                )}
              </td>
              <td data-label="Recent failures" className="num">
                {credential.recentFailures}
              </td>
              <td data-label="Weight" className="num">
                {credential.weight}
              </td>
              <td data-label="Share" className="num">
                {shareOf(credential, credentials)}
              </td>
              <td data-label="Mean latency" className="num">
                {credential.meanLatencyMs === null ? '—' : `${credential.meanLatencyMs} ms`}
              </td>
              <td data-label="Last error">
                {credential.lastError === null ? (
                  '—'
                ) : (
                  <span className="small">
                    {credential.lastError.reason} {formatRelative(credential.lastError.at)}
                  </span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
