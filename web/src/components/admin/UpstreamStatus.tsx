import { ApiError } from '../../api/client';
import { admin } from '../../api/endpoints';
import { formatRelative } from '../../lib/format';
import { useAsync } from '../../lib/use-async';
import { ErrorNotice, Loading } from '../Notice';
import { StatusBadge } from '../StatusBadge';

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
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
