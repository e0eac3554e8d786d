import { startAuthentication, WebAuthnError } from '@simplewebauthn/browser';
import { useEffect, useState } from 'react';
import { identity, ssoStartUrl } from '../api/identity';
import type { Account } from '../api/types';
import { Notice } from './Notice';

/** Where single sign-on comes back to: the page asked for (`?next=`), only ever a path of this app. */
function returnPath(): string {
  const next = new URLSearchParams(window.location.search).get('next');
  return next !== null && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/';
}

/** A refused single sign-on comes back to the log-in page with the reason in `?sso_error=`. */
function ssoError(): string | undefined {
  return new URLSearchParams(window.location.search).get('sso_error')?.slice(0, 300) ?? undefined;
}

/** Passkey sign-in and one "Sign in with <provider>" button per configured provider. */
export function SignInAlternatives({ onSignedIn }: { onSignedIn: (account: Account) => void }) {
  const [providers, setProviders] = useState<Array<{ id: string; name: string }>>([]);
  const [error, setError] = useState<string | undefined>(ssoError);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    identity.ssoProviders().then(
      (reply) => setProviders(reply.providers),
      () => setProviders([]),
    );
  }, []);

  async function passkey() {
    setBusy(true);
    setError(undefined);
    try {
      const { passkeyToken, options } = await identity.passkeySignInOptions();
      const response = await startAuthentication({ optionsJSON: options });
      const { account } = await identity.passkeySignIn(passkeyToken, response);
      onSignedIn(account);
    } catch (reason) {
      setError(
        reason instanceof WebAuthnError || (reason instanceof Error && reason.name === 'NotAllowedError')
          ? 'The passkey sign-in was cancelled or timed out.'
          : (reason as Error).message,
      );
      setBusy(false);
    }
  }

  return (
    <div className="sign-in-alternatives">
      <p className="muted sign-in-divider">or</p>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      <button type="button" className="button button-secondary button-block" onClick={passkey} disabled={busy}>
        {busy ? 'Waiting for the passkey…' : 'Sign in with a passkey'}
      </button>
      {providers.map((provider) => (
        <a
          key={provider.id}
          className="button button-secondary button-block"
          href={ssoStartUrl(provider.id, returnPath())}
        >
          Sign in with {provider.name}
        </a>
      ))}
    </div>
  );
}
