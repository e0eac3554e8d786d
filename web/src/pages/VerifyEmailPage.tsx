import { useEffect, useRef, useState } from 'react';
import { identity } from '../api/identity';
import { Link } from '../components/Link';
import { Notice } from '../components/Notice';
import { LinkPageFrame } from './LinkPageFrame';

/** Opened from a verification link: confirms the address once, on arrival, and says what happened. */
export function VerifyEmailPage({ onVerified }: { onVerified: () => void }) {
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  // Once: a second call (React's development double effects) would find the link used.
  const sent = useRef(false);
  useEffect(() => {
    if (sent.current) return;
    sent.current = true;
    const token = new URLSearchParams(window.location.search).get('token') ?? '';
    identity.verifyEmail(token).then(
      (verified) => {
        setResult({ ok: true, text: `${verified.email} is verified. Thank you!` });
        onVerified();
      },
      (reason: Error) => setResult({ ok: false, text: reason.message }),
    );
  }, [onVerified]);
  return (
    <LinkPageFrame title="Verify your email">
      {result === undefined ? (
        <p className="muted" role="status">
          Checking the link…
        </p>
      ) : (
        <Notice kind={result.ok ? 'success' : 'error'}>{result.text}</Notice>
      )}
      <p className="auth-footer">
        <Link href="/">Go to the dashboard</Link>
      </p>
    </LinkPageFrame>
  );
}
