import { useState } from 'react';
import { identity, type SessionRow } from '../../api/identity';
import { formatDateTime } from '../../lib/format';
import { useAsync } from '../../lib/use-async';
import { ErrorNotice, Loading, Notice } from '../Notice';

/** The person's sessions (device, address, started, last used), each endable, or all but this one at once. */
export function SessionsList() {
  const sessions = useAsync(() => identity.sessions(), []);
  const [error, setError] = useState<Error>();
  const [message, setMessage] = useState<string>();
  async function act(work: () => Promise<{ ended: number }>) {
    setError(undefined);
    try {
      const { ended } = await work();
      setMessage(`${ended} session${ended === 1 ? '' : 's'} ended.`);
      sessions.reload();
    } catch (reason) {
      setError(reason as Error);
    }
  }
  if (sessions.data === undefined) return sessions.error ? <ErrorNotice error={sessions.error} /> : <Loading />;
  const rows: SessionRow[] = sessions.data.sessions;
  return (
    <>
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Sessions, scrollable">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">IP address</th>
              <th scope="col">Started</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.id}>
                <td data-label="Device" title={row.userAgent ?? undefined}>
                  {row.device}
                  {row.current && <span className="muted"> (this session)</span>}
                </td>
                <td data-label="IP address">{row.ip ?? '—'}</td>
                <td data-label="Started">{formatDateTime(row.createdAt)}</td>
                <td data-label="Last used">{formatDateTime(row.lastSeenAt)}</td>
                <td className="actions">
                  {!row.current && (
                    <button
                      type="button"
                      className="button button-secondary button-small"
                      aria-label={`End the session on ${row.device}`}
                      onClick={() => void act(() => identity.endSession(row.id))}
                    >
                      End
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows.length > 1 && (
        <button
          type="button"
          className="button button-secondary"
          onClick={() => void act(() => identity.endOtherSessions())}
        >
          End all other sessions
        </button>
      )}
      {message !== undefined && <Notice kind="success">{message}</Notice>}
      <ErrorNotice error={error} />
    </>
  );
}
