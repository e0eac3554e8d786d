import { useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client';
import { identity } from '../../api/identity';
import { Field } from '../Field';
import { Notice } from '../Notice';

/** A new address, confirmed with the password; it takes effect when the link sent there is opened. */
export function EmailChangeForm() {
  const [newEmail, setNewEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string; field?: string | undefined }>();
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      setResult({ ok: true, text: (await identity.changeEmail(newEmail, password)).message });
      setPassword('');
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
  const fieldError = (name: string) => (result?.ok === false && result.field === name ? result.text : undefined);
  return (
    <form onSubmit={submit} className="narrow-form">
      <Field
        label="New email"
        type="email"
        autoComplete="email"
        required
        value={newEmail}
        onChange={(event) => setNewEmail(event.target.value)}
        error={fieldError('newEmail')}
      />
      <Field
        label="Password"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(event) => setPassword(event.target.value)}
        error={fieldError('password')}
      />
      {result !== undefined && (result.ok || (result.field !== 'newEmail' && result.field !== 'password')) && (
        <Notice kind={result.ok ? 'success' : 'error'}>{result.text}</Notice>
      )}
      <button type="submit" className="button button-primary" disabled={busy}>
        {busy ? 'Sending…' : 'Change email'}
      </button>
    </form>
  );
}
