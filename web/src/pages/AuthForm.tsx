import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError } from '../api/client';
import type { Account } from '../api/types';
import { Field } from '../components/Field';
import { Notice } from '../components/Notice';
import { DisabledAccountBanner } from '../components/account/DisabledAccountBanner';

export const PASSWORD_RULES = '10 to 200 characters, and not your email address.';

interface AuthFormProps {
  title: string;
  submitLabel: string;
  passwordHint?: string;
  passwordAutoComplete: 'current-password' | 'new-password';
  submit: (email: string, password: string) => Promise<{ account: Account }>;
  onSignedIn: (account: Account) => void;
  footer: ReactNode;
  /** Other ways in, under the form (passkey, single sign-on). */
  alternatives?: ReactNode;
}

/** The shared email + password card of the log-in and registration pages. */
export function AuthForm({
  title,
  submitLabel,
  passwordHint,
  passwordAutoComplete,
  submit,
  onSignedIn,
  footer,
  alternatives,
}: AuthFormProps) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | Error>();
  const [busy, setBusy] = useState(false);

  async function onSubmit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { account } = await submit(email, password);
      onSignedIn(account);
    } catch (reason) {
      setError(reason instanceof Error ? reason : new Error(String(reason)));
      setBusy(false);
    }
  }

  const field = error instanceof ApiError ? error.field : undefined;
  // The server's message says when to try again, once.
  const message = error?.message;
  return (
    <main className="auth-page">
      <div className="auth-card card">
        <div className="auth-brand" aria-hidden="true">
          <span className="brand-mark">T</span> Tollgate
        </div>
        <h1>{title}</h1>
        <form onSubmit={onSubmit} noValidate={false}>
          <Field
            label="Email"
            type="email"
            name="email"
            autoComplete="email"
            required
            value={email}
            onChange={(event) => setEmail(event.target.value)}
            error={field === 'email' ? message : undefined}
          />
          <Field
            label="Password"
            type="password"
            name="password"
            autoComplete={passwordAutoComplete}
            required
            minLength={passwordAutoComplete === 'new-password' ? 10 : undefined}
            maxLength={200}
            value={password}
            onChange={(event) => setPassword(event.target.value)}
            hint={passwordHint}
            error={field === 'password' ? message : undefined}
          />
          {error instanceof ApiError && error.code === 'account_disabled' ? (
            <DisabledAccountBanner email={email} />
          ) : (
            error !== undefined && field !== 'email' && field !== 'password' && <Notice kind="error">{message}</Notice>
          )}
          <button type="submit" className="button button-primary button-block" disabled={busy}>
            {busy ? 'Please wait…' : submitLabel}
          </button>
        </form>
        {alternatives}
        <p className="auth-footer">{footer}</p>
      </div>
    </main>
  );
}
