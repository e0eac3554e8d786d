import { useState } from 'react';
import { identity, type EmailState } from '../../api/identity';
import { useAsync } from '../../lib/use-async';

/**
 * Until the address is verified: a banner with "resend", or, where the gateway sends no mail but requires a verified
 * address, who to ask. Without mail and without the requirement, verifying changes nothing for the person: no banner.
 */
export function VerifyEmailBanner({ path }: { path: string }) {
  // Read again on every page change: the link may have been opened in another tab.
  const state = useAsync<EmailState>(() => identity.state(), [path]);
  const [sent, setSent] = useState<{ ok: boolean; text: string }>();
  const [busy, setBusy] = useState(false);
  const current = state.data;
  if (current === undefined || current.emailVerified) return null;
  if (!current.mailConfigured && !current.verificationRequired) return null;
  async function resend() {
    setBusy(true);
    try {
      setSent({ ok: true, text: (await identity.resendVerification()).message });
    } catch (reason) {
      setSent({ ok: false, text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }
  return (
    <section className="notice notice-warning verify-banner" aria-label="Email verification">
      <p>
        Your email address <strong className="unbroken">{current.email}</strong> is not verified yet
        {current.verificationRequired ? ': API keys can be created once it is.' : '.'}{' '}
        {current.mailConfigured
          ? 'Open the link we sent you.'
          : 'This gateway sends no mail: ask its operator to verify it.'}
      </p>
      {current.mailConfigured && (
        <button type="button" className="button button-secondary button-small" onClick={resend} disabled={busy}>
          {busy ? 'Sending…' : 'Resend the link'}
        </button>
      )}
      {sent !== undefined && (
        <p role={sent.ok ? 'status' : 'alert'} className={sent.ok ? '' : 'field-error'}>
          {sent.text}
        </p>
      )}
    </section>
  );
}
