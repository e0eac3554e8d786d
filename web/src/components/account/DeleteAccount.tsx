import { useState } from 'react';
import { ApiError } from '../../api/client';
import { identity } from '../../api/identity';
import { useSession } from '../../lib/session';
import { ConfirmDialog } from '../ConfirmDialog';
import { Field } from '../Field';
import { Notice } from '../Notice';

/** Deletes the account after a confirm dialog that asks for the password again. */
export function DeleteAccount() {
  const { signOut } = useSession();
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error>();
  async function confirm() {
    setBusy(true);
    setError(undefined);
    try {
      await identity.deleteAccount(password);
      signOut();
    } catch (reason) {
      setError(reason as Error);
      setBusy(false);
    }
  }
  const field = error instanceof ApiError ? error.field : undefined;
  return (
    <>
      <p>
        Your email, password and sessions are removed and your API keys stop working. Billing records stay, without your
        address. This cannot be undone.
      </p>
      <button type="button" className="button button-danger" onClick={() => setOpen(true)}>
        Delete account…
      </button>
      <ConfirmDialog
        title="Delete your account?"
        open={open}
        confirmLabel="Delete account"
        danger
        busy={busy}
        onConfirm={() => void confirm()}
        onCancel={() => {
          setOpen(false);
          setError(undefined);
          setPassword('');
        }}
      >
        <p>Every API key stops working at once. Enter your password to confirm.</p>
        <Field
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(event) => setPassword(event.target.value)}
          error={field === 'password' ? error?.message : undefined}
        />
        {error !== undefined && field !== 'password' && <Notice kind="error">{error.message}</Notice>}
      </ConfirmDialog>
    </>
  );
}
