import { useState, type FormEvent } from 'react';
import { identity } from '../api/identity';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { Notice } from '../components/Notice';
import { LinkPageFrame } from './LinkPageFrame';

/** "Forgot password?": asks for a reset link by mail. The answer is the same whether the address has an account. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      setResult({ ok: true, text: (await identity.forgotPassword(email)).message });
    } catch (reason) {
      setResult({ ok: false, text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }
  return (
    <LinkPageFrame title="Reset your password">
      <form onSubmit={submit}>
        <Field
          label="Email"
          type="email"
          autoComplete="email"
          required
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          hint="We send a link to choose a new password. It works once, for an hour."
        />
        {result !== undefined && <Notice kind={result.ok ? 'success' : 'error'}>{result.text}</Notice>}
        <button type="submit" className="button button-primary button-block" disabled={busy}>
          {busy ? 'Please wait…' : 'Send the link'}
        </button>
      </form>
      <p className="auth-footer">
        Remembered it? <Link href="/login">Log in</Link>
      </p>
    </LinkPageFrame>
  );
}
