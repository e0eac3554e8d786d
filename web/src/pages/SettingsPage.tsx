import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { auth } from '../api/endpoints';
import { Field } from '../components/Field';
import { Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { SecuritySettings } from '../components/SecuritySettings';
import { formatDate } from '../lib/format';
import { useSession } from '../lib/session';
import { DeleteAccount } from '../components/account/DeleteAccount';
import { EmailChangeForm } from '../components/account/EmailChangeForm';
import { SessionsList } from '../components/account/SessionsList';
import { PASSWORD_RULES } from './AuthForm';

function ChangePasswordForm() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string; field?: string | undefined }>();
  async function submit(event: FormEvent) {
    event.preventDefault();
    if (next !== confirm) return setResult({ ok: false, text: 'The new passwords do not match.', field: 'confirm' });
    setBusy(true);
    setResult(undefined);
    try {
      await auth.changePassword(current, next);
      setResult({ ok: true, text: 'Password changed. Other sessions of this account were logged out.' });
      setCurrent('');
      setNext('');
      setConfirm('');
    } catch (reason) {
      setResult({
        ok: false,
        text: (reason as Error).message,
        field: reason instanceof ApiError ? reason.field : undefined,
      });
    } finally {
      setBusy(false);
    }
  }
  const fieldError = (name: string) =>
    result !== undefined && !result.ok && result.field === name ? result.text : undefined;
  const general =
    result !== undefined && (result.ok || !['currentPassword', 'newPassword', 'confirm'].includes(result.field ?? ''));
  return (
    <form onSubmit={submit} className="narrow-form">
      <Field
        label="Current password"
        type="password"
        autoComplete="current-password"
        required
        value={current}
        onChange={(event) => setCurrent(event.target.value)}
        error={fieldError('currentPassword')}
      />
      <Field
        label="New password"
        type="password"
        autoComplete="new-password"
        required
        minLength={10}
        maxLength={200}
        value={next}
        onChange={(event) => setNext(event.target.value)}
        hint={PASSWORD_RULES}
        error={fieldError('newPassword')}
      />
      <Field
        label="Confirm new password"
        type="password"
        autoComplete="new-password"
        required
        value={confirm}
        onChange={(event) => setConfirm(event.target.value)}
        error={fieldError('confirm')}
      />
      {general && result !== undefined && <Notice kind={result.ok ? 'success' : 'error'}>{result.text}</Notice>}
      <button type="submit" className="button button-primary" disabled={busy}>
        {busy ? 'Saving…' : 'Change password'}
      </button>
    </form>
  );
}

export function SettingsPage() {
  const { account } = useSession();
  return (
    <>
      <PageHeader title="Settings" />
      <section className="card section" aria-labelledby="account-heading">
        <h2 id="account-heading">Account</h2>
        <dl className="details">
          <dt>Email</dt>
          <dd>{account.email}</dd>
          <dt>Rate-limit tier</dt>
          <dd>{account.tier}</dd>
          <dt>Member since</dt>
          <dd>{formatDate(account.createdAt)}</dd>
          <dt>Account id</dt>
          <dd>
            <code>{account.id}</code>
          </dd>
        </dl>
      </section>
      <section className="card section" aria-labelledby="password-heading">
        <h2 id="password-heading">Change password</h2>
        <ChangePasswordForm />
      </section>
      <section className="card section" aria-labelledby="email-heading">
        <h2 id="email-heading">Change email</h2>
        <EmailChangeForm />
      </section>
      <section className="card section" aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        <SessionsList />
      </section>
      <SecuritySettings />
      <section className="card section" aria-labelledby="delete-heading">
        <h2 id="delete-heading">Delete account</h2>
        <DeleteAccount />
      </section>
    </>
  );
}
