import { startAuthentication } from '@simplewebauthn/browser';
import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { identity, type PendingSecondFactor } from '../api/identity';
import type { Account } from '../api/types';
import { Field } from '../components/Field';
import { Notice } from '../components/Notice';

/** The second step of a password sign-in: a code from the authenticator app, a recovery code, or a passkey. */
export function SecondFactorStep({
  pending,
  onSignedIn,
  onRestart,
}: {
  pending: PendingSecondFactor;
  onSignedIn: (account: Account) => void;
  onRestart: () => void;
}) {
  const hasTotp = pending.methods.includes('totp');
  const [useRecovery, setUseRecovery] = useState(false);
  const [entry, setEntry] = useState('');
  const [error, setError] = useState<string>();
  const [expired, setExpired] = useState(false);
  const [busy, setBusy] = useState(false);

  function failed(reason: unknown) {
    const message = reason instanceof Error ? reason.message : String(reason);
    setError(message);
    // Too many wrong codes, or too slow: the password has to be entered again.
    if (reason instanceof ApiError && (reason.code === 'second_factor_expired' || /Too many tries/.test(message)))
      setExpired(true);
    setBusy(false);
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const reply = await identity.secondFactor(
        pending.token,
        useRecovery ? { recoveryCode: entry } : { code: entry.replace(/\s/g, '') },
      );
      onSignedIn(reply.account);
    } catch (reason) {
      failed(reason);
    }
  }

  async function passkey() {
    setBusy(true);
    setError(undefined);
    try {
      const { passkeyToken, options } = await identity.passkeySignInOptions(pending.token);
      const response = await startAuthentication({ optionsJSON: options });
      onSignedIn((await identity.passkeySignIn(passkeyToken, response, pending.token)).account);
    } catch (reason) {
      failed(reason);
    }
  }

  return (
    <main className="auth-page">
      <div className="auth-card card">
        <div className="auth-brand" aria-hidden="true">
          <span className="brand-mark">T</span> Tollgate
        </div>
        <h1>Two-step sign-in</h1>
        {expired ? (
          <>
            {error !== undefined && <Notice kind="error">{error}</Notice>}
            <button type="button" className="button button-primary button-block" onClick={onRestart}>
              Back to log in
            </button>
          </>
        ) : (
          <>
            {hasTotp && (
              <form onSubmit={submit}>
                <Field
                  label={useRecovery ? 'Recovery code' : 'Code from your authenticator app'}
                  name={useRecovery ? 'recovery-code' : 'one-time-code'}
                  autoComplete="one-time-code"
                  inputMode={useRecovery ? 'text' : 'numeric'}
                  required
                  maxLength={useRecovery ? 20 : 6}
                  value={entry}
                  onChange={(event) => setEntry(event.target.value)}
                  error={error}
                />
                <button type="submit" className="button button-primary button-block" disabled={busy}>
                  {busy ? 'Checking…' : 'Continue'}
                </button>
                <button
                  type="button"
                  className="button button-link"
                  onClick={() => {
                    setUseRecovery(!useRecovery);
                    setEntry('');
                    setError(undefined);
                  }}
                >
                  {useRecovery ? 'Use the authenticator app instead' : 'Use a recovery code instead'}
                </button>
              </form>
            )}
            {!hasTotp && error !== undefined && <Notice kind="error">{error}</Notice>}
            {pending.methods.includes('passkey') && (
              <button type="button" className="button button-secondary button-block" onClick={passkey} disabled={busy}>
                Use a passkey
              </button>
            )}
          </>
        )}
        <p className="auth-footer">
          <button type="button" className="button button-link" onClick={onRestart}>
            Start over
          </button>
        </p>
      </div>
    </main>
  );
}
