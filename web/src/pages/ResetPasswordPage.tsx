import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { identity, type PendingSecondFactor, safeNext } from '../api/identity';
import type { Account } from '../api/types';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { Notice } from '../components/Notice';
import { PASSWORD_RULES } from './AuthForm';
import { LinkPageFrame } from './LinkPageFrame';
import { SecondFactorStep } from './SecondFactorStep';

/**
 * Opened from a reset link: a new password, then signed in (every other session of the account has ended), after
 * the second step when the account has a second factor.
 */
export function ResetPasswordPage({ onSignedIn }: { onSignedIn: (account: Account, next: string) => void }) {
  const search = new URLSearchParams(window.location.search);
  const token = search.get('token') ?? '';
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ text: string; field?: string | undefined }>();
  const [pending, setPending] = useState<PendingSecondFactor>();
  async function submit(event: FormEvent) {
    event.preventDefault();
    if (password !== confirm) return setError({ text: 'The passwords do not match.', field: 'confirm' });
    setBusy(true);
    setError(undefined);
    try {
      const reply = await identity.resetPassword(token, password);
      if (reply.account === null) return setPending(reply.secondFactor);
      onSignedIn(reply.account, safeNext(search.get('next')));
    } catch (reason) {
      setError({ text: (reason as Error).message, field: reason instanceof ApiError ? reason.field : undefined });
      setBusy(false);
    }
  }
  if (pending !== undefined) {
    return (
      <SecondFactorStep
        pending={pending}
        onSignedIn={(account) => onSignedIn(account, safeNext(search.get('next')))}
        // The password is changed already: a fresh start is the log-in page with the new one.
        onRestart={() => window.location.assign('/login')}
      />
    );
  }
  return (
    <LinkPageFrame title="Choose a new password">
      <form onSubmit={submit}>
        <Field
          label="New password"
          type="password"
          autoComplete="new-password"
          required
          minLength={10}
          maxLength={200}
          value={password}
          onChange={(event) => setPassword(event.target.value)}
          hint={PASSWORD_RULES}
          error={error?.field === 'newPassword' ? error.text : undefined}
        />
        <Field
          label="Confirm new password"
          type="password"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(event) => setConfirm(event.target.value)}
          error={error?.field === 'confirm' ? error.text : undefined}
        />
        {error !== undefined && error.field !== 'newPassword' && error.field !== 'confirm' && (
          <Notice kind="error">{error.text}</Notice>
        )}
        <button type="submit" className="button button-primary button-block" disabled={busy}>
          {busy ? 'Please wait…' : 'Set password and log in'}
        </button>
      </form>
      <p className="auth-footer">
        Link not working? <Link href="/forgot-password">Ask for a new one</Link>
      </p>
    </LinkPageFrame>
  );
}
