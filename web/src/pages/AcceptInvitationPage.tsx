import { useState } from 'react';
import { invitations } from '../api/organisations';
import type { Account } from '../api/types';
import { Link } from '../components/Link';
import { Notice } from '../components/Notice';
import { formatDate } from '../lib/format';
import { useAsync } from '../lib/use-async';
import { LinkPageFrame } from './LinkPageFrame';

/**
 * Opened from an invitation link, signed in or not: says who invites whom to what; a signed-out visitor logs in or
 * registers (and comes back here), a signed-in one accepts.
 */
export function AcceptInvitationPage({ account, onAccepted }: { account: Account | null; onAccepted: () => void }) {
  const token = new URLSearchParams(window.location.search).get('token') ?? '';
  const preview = useAsync(() => invitations.preview(token), [token]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const back = encodeURIComponent(`/accept-invitation?token=${token}`);

  async function accept() {
    setBusy(true);
    setError(undefined);
    try {
      await invitations.accept(token);
      onAccepted();
    } catch (reason) {
      setError((reason as Error).message);
      setBusy(false);
    }
  }

  const invitation = preview.data?.invitation;
  return (
    <LinkPageFrame title="Join an organisation">
      {preview.loading && invitation === undefined && (
        <p className="muted" role="status">
          Checking the invitation…
        </p>
      )}
      {preview.error !== undefined && <Notice kind="error">{preview.error.message}</Notice>}
      {invitation !== undefined && (
        <div className="stack">
          <p>
            {invitation.invitedByEmail} invites <strong>{invitation.email}</strong> to join{' '}
            <strong>{invitation.organisationName}</strong> as <strong>{invitation.role}</strong>. The invitation works
            until {formatDate(invitation.expiresAt)}.
          </p>
          {error !== undefined && <Notice kind="error">{error}</Notice>}
          {account === null ? (
            <>
              <p>Log in with that address to accept, or create an account with it first.</p>
              <p className="form-row">
                <Link href={`/login?next=${back}`} className="button button-primary">
                  Log in
                </Link>
                <Link href={`/register?next=${back}`} className="button button-secondary">
                  Create an account
                </Link>
              </p>
            </>
          ) : (
            <>
              <p className="muted small">You are signed in as {account.email}.</p>
              <button type="button" className="button button-primary" disabled={busy} onClick={() => void accept()}>
                {busy ? 'Joining…' : `Join ${invitation.organisationName}`}
              </button>
            </>
          )}
        </div>
      )}
      <p className="auth-footer">
        <Link href="/">Go to the dashboard</Link>
      </p>
    </LinkPageFrame>
  );
}
